"""Parse cache for lines that differ only in digits: parse once per template, re-read the digits each time."""
from __future__ import annotations

import re

from lark import Lark, Token, Tree
from lark.exceptions import LarkError

# A key keeps every character but makes every ASCII digit "0": same length, so every token of
# a cached tree sits at the same offsets in any line with the same key.
DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")
# Terminals that tell one digit from another (a literal digit, a class like [45]), and a regex
# that finds every line where such a terminal could match. Those lines bypass the cache.
# tests/test_fast_path.py recomputes the set from the grammars and fails if it changes.
DIGIT_SENSITIVE = {
    "A_INITIALIZING": r"V\d",            # "Initializing a V1 LLM engine"
    "A_FP8_TYPE_UNSUPPORTED": r"fp\d",   # "type fp8e4nv not supported"
    "A_HTTP_STATUS": r'" \d',            # 'HTTP/1.1" 500': only 4xx and 5xx are anchors
}
# Digit-uniform itself, so two lines with one key either both match it or neither does.
BYPASS = re.compile("|".join(DIGIT_SENSITIVE.values()))
MAX_TEMPLATES = 4096  # bounded memory: a log of ever-new templates just clears and refills


class TemplateCache:
    """A `parse(parser, text)` for grammar.parse_line that reuses the tree of an earlier line of the same shape.

    Exact because every terminal outside DIGIT_SENSITIVE treats all digits alike: changing
    digits without moving them leaves the lexer's choices, the token boundaries and the tree
    shape unchanged; only token values change, and those are re-read from the new line.
    """

    def __init__(self) -> None:
        self.trees: dict[tuple[int, str], Tree | LarkError] = {}

    def parse(self, parser: Lark, text: str) -> Tree:
        if BYPASS.search(text):
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


def _with_text(node, text: str):
    """A copy of a tree whose tokens take their values from `text` at the same offsets."""
    if isinstance(node, Token):
        return node.update(value=text[node.start_pos:node.end_pos])
    if isinstance(node, Tree):
        return Tree(node.data, [_with_text(child, text) for child in node.children])
    return node  # None for an absent optional part
