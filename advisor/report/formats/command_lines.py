"""A printed command on a terminal: whether it shows as what it is, and its lines at a width."""

from __future__ import annotations

import shlex
import unicodedata

# Control, format (bidirectional overrides, zero-width) and line-separator characters: a terminal
# hides, reorders or breaks on them, so the command on screen is not the one that would be pasted.
HIDDEN_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}


def shows_as_is(printed: str) -> bool:
    """Whether a printed command looks on a terminal exactly like what it is."""
    return not any(unicodedata.category(char) in HIDDEN_CATEGORIES for char in printed)


def wrapped(printed: str, width: int, indent: str = "  ") -> list[str]:
    """A printed command in lines of at most `width` columns where its words allow, ending in ' \\'
    but the last: pasted into a shell it is the same command. A flag stays with its value."""
    groups: list[str] = []
    for word in (shlex.quote(w) for w in shlex.split(printed)):
        program = len(groups) == 1 and not groups[0].startswith("-")  # `vllm serve MODEL`, `python`
        bare_flag = bool(groups) and groups[-1].startswith("-") and " " not in groups[-1]
        if not word.startswith("-") and (program or bare_flag):
            groups[-1] += " " + word
        else:
            groups.append(word)
    lines, current = [], indent
    for group in groups:
        if current.strip() and len(current) + 1 + len(group) + 2 > width:
            lines.append(current + " \\")
            current = indent + "    " + group
        else:
            current = current + (" " if current.strip() else "") + group
    return [*lines, current]
