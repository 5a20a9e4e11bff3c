"""What every command says and how it ends: one-line errors (a usage error, an input that cannot be
read, an output that cannot be written) and the exit codes.

Every subcommand's parser is a OneLineParser; cli.main turns an InputError into one
'vllm-advisor: ...' line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class InputError(Exception):
    """A file that cannot be read, or a report that cannot be written: reported in one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one 'vllm-advisor: ...' line like every other error."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see --help)")


def error_line(message: str, code: int = EXIT_USAGE) -> int:
    print(f"vllm-advisor: {message}", file=sys.stderr)
    return code


def discard_stdout() -> None:
    # Python flushes stdout again at exit; pointing it at /dev/null keeps that flush from
    # printing "Exception ignored" after our one-line message.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@contextmanager
def writing(what: str) -> Iterator[None]:
    """Around writes to stdout: a full disk or a revoked terminal is a one-line error like any
    other; a reader that left (BrokenPipeError) is main's to keep quiet about."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as error:
        discard_stdout()
        raise InputError(f"cannot write the {what}: {error.strerror or error}") from None


def write_lines(lines: list[str]) -> int:
    with writing("output"):
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
    return EXIT_OK
