"""Parsing: the Lark grammars over each line, and their transformer into typed facts."""
