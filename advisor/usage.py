"""Errors the command line reports in one line: a usage error, an input that cannot be read.

Every subcommand's parser is a OneLineParser; cli.main turns an InputError into one
'vllm-advisor: ...' line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class InputError(Exception):
    """A file that cannot be read, or a report that cannot be written: reported in one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one 'vllm-advisor: ...' line like every other error."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see --help)")
