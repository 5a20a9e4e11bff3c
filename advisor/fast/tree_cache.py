"""The grammar's trees of lines that differ only in digits: parsed once per shape, each later line's
tokens re-read from its own text."""

from __future__ import annotations

import re
from typing import overload

from lark import Lark, Token, Tree
from lark.exceptions import LarkError

from advisor.parse.parsers import terminal_notes
from advisor.parse.places import LOCATED_ERROR

# A key keeps every character but makes every ASCII digit "0": same length, so every token of
# a cached tree sits at the same offsets in any line with the same key.
DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")
# Terminals that tell one digit from another (a literal digit, a class like [45]), each with a regex
# that finds every line where it could match (its `digit-sensitive` note in the grammar). Those lines
# bypass the cache. tests/oracles/test_fast_path.py recomputes the set from the grammars and fails if it changes.
DIGIT_SENSITIVE = terminal_notes("digit-sensitive")
# Digit-uniform itself, so two lines with one key either both match it or neither does; so are the
# error records whose [file:line] places them.
BYPASS = re.compile("|".join([*DIGIT_SENSITIVE.values(), LOCATED_ERROR.pattern]))
MAX_TEMPLATES = 4096  # bounded memory: a log of ever-new templates just clears and refills
# Recipes and trees are kept for lines up to this long: longer ones are rare (launch arguments,
# long error messages) and go the plain way, so MAX_TEMPLATES keys hold 4 MB at most (4096 lines
# of 64 KB, each with its tree, held 700 MB).
MAX_CACHED_LINE = 1024


class TemplateCache:
    """A `parse(parser, text)` for grammar.parse_line that reuses the tree of an earlier line of the same shape.

    Exact because every terminal outside DIGIT_SENSITIVE treats all digits alike: changing
    digits without moving them leaves the lexer's choices, the token boundaries and the tree
    shape unchanged; only token values change, and those are re-read from the new line.
    """

    def __init__(self) -> None:
        self.trees: dict[tuple[int, str], Tree[Token] | LarkError] = {}

    def parse(self, parser: Lark, text: str) -> Tree[Token]:
        if len(text) > MAX_CACHED_LINE or BYPASS.search(text):
            return parser.parse(text)
        key = (id(parser), text.translate(DIGITS_TO_ZERO))
        cached = self.trees.get(key)
        if cached is None:
            if len(self.trees) >= MAX_TEMPLATES:
                self.trees.clear()
            try:
                cached = self.trees[key] = parser.parse(text)
            except LarkError as error:
                self.trees[key] = error
                raise
            return cached
        if isinstance(cached, LarkError):
            raise cached
        return _with_text(cached, text)


@overload
def _with_text(node: Tree[Token], text: str) -> Tree[Token]: ...
@overload
def _with_text(node: Token | Tree[Token], text: str) -> Token | Tree[Token]: ...
def _with_text(node: Token | Tree[Token] | None, text: str) -> Token | Tree[Token] | None:
    """A copy of a tree whose tokens take their values from `text` at the same offsets."""
    if isinstance(node, Token):
        return node.update(value=text[node.start_pos : node.end_pos])
    if isinstance(node, Tree):
        return Tree(node.data, [_with_text(child, text) for child in node.children])
    return node  # None for an absent optional part
