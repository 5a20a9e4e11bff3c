"""The anchors: the grammar's words that find a message anywhere in a line, searched for fast."""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

from advisor.parse.parsers import literal_terminals, message_parser, terminal_notes


@cache
def anchor_terminals() -> tuple[tuple[str, str], ...]:
    """(name, regular expression) of each anchor terminal (A_*), in the grammar's order: the words a
    message can start with."""
    return tuple((t.name, t.pattern.to_regexp()) for t in message_parser().terminals if t.name.startswith("A_"))


def anchor_regex() -> re.Pattern[str]:
    """All anchors in one pattern, the name of the group that matched the anchor's terminal: what
    find_anchor finds, and the tests check it against (too slow to compile for a run's path)."""
    return re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in anchor_terminals()))


@cache
def anchor_words() -> tuple[str, ...]:
    """Words of which every anchor match holds one: string anchors, and a regex anchor's literals."""
    words = [word for name, _ in anchor_terminals() for word in _words_of(name)]
    return tuple(dict.fromkeys(words))


def _words_of(name: str) -> tuple[str, ...]:
    """The words of which every match of an anchor terminal holds one."""
    literal = literal_terminals().get(name)
    return (literal,) if literal is not None else tuple(terminal_notes("literals")[name])


@cache
def anchor_word_regex() -> re.Pattern[str]:
    """One search for any anchor word: where none is, no anchor is either."""
    return re.compile("|".join(re.escape(word) for word in anchor_words()))


@cache
def anchor_of_word() -> tuple[tuple[str, int], ...]:
    """Each anchor word, with the index of its anchor in anchor_terminals(): one pass over the words
    finds every anchor a text may hold."""
    return tuple((word, index) for index, (name, _) in enumerate(anchor_terminals()) for word in _words_of(name))


@cache
def _anchor_search(index: int) -> re.Pattern[str]:
    """One anchor's own pattern, compiled the first time a text holds one of its words: a small log
    compiles a few of them, not all."""
    return re.compile(anchor_terminals()[index][1])


class Anchor(NamedTuple):
    """Where a message may start: the anchor terminal found there, and its place in the text."""

    name: str
    start: int


def find_anchor(text: str, position: int = 0) -> Anchor | None:
    """The first anchor in the text from a place on (see AnchorSearch)."""
    return AnchorSearch(text).find(position)


class AnchorSearch:
    """The anchors of one text, found from ever later places: anchor_regex().search, quicker.

    The regex of all anchors tries each of them at every character (about 1.5 microseconds a character).
    Instead, each anchor whose words the text holds is searched alone, and the first of those that
    starts at the first place any does is the one the alternation finds: it matches at the first place
    where one of its branches does, with the first branch that matches there. Each anchor's next start
    is kept, so a line's messages, found one after another, search its text once.
    """

    __slots__ = ("starts", "text")

    def __init__(self, text: str):
        self.text = text
        self.starts: dict[int, int] | None = None  # the next start of each anchor whose words the text holds

    def find(self, position: int = 0) -> Anchor | None:
        text = self.text
        if anchor_word_regex().search(text, position) is None:
            return None
        if self.starts is None:
            # An anchor none of whose words the text holds matches nowhere in it.
            self.starts = {anchor: -1 for word, anchor in anchor_of_word() if word in text}
        starts = self.starts
        for index, start in starts.items():
            if start < position:
                found = _anchor_search(index).search(text, position)
                starts[index] = found.start() if found else len(text)
        # The first start, and of the anchors starting there the first in the grammar's order.
        first, index = min(((start, index) for index, start in starts.items()), default=(len(text), 0))
        return Anchor(anchor_terminals()[index][0], first) if first < len(text) else None
