"""Logged and raised message formats in one Python source, read with ast (the code is never run)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

# Bump when what is extracted changes: releases cached by an older version are read again.
VERSION = 5
LOG_METHODS = {
    "info",
    "warning",
    "warn",
    "error",
    "debug",
    "exception",
    "critical",
    "info_once",
    "warning_once",
    "debug_once",
    "error_once",
}


def template(node: ast.AST, names: dict[str, ast.AST] | None = None) -> tuple[str, str] | None:
    """(template, style) of a message expression; style is "%", "{}" or "" (no placeholders).

    f-string interpolations become {expr[!r][:spec]}; %-formats keep their %d/%.2f; a name
    assigned a string earlier in the same function stands for that string.
    """
    names = names or {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, ""
    if isinstance(node, ast.JoinedStr):
        return "".join(_fstring_part(part, names) for part in node.values), "{}"
    if isinstance(node, ast.Name) and node.id in names:
        return template(names.pop(node.id), names)  # popped: `msg = f"{msg} ..."` must not loop
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = template(node.left, names)
        return (left[0], "%") if left else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left, names), template(node.right, names)
        if not (left or right):
            return None
        left = left or (f"{{{ast.unparse(node.left)}}}", "{}")
        right = right or (f"{{{ast.unparse(node.right)}}}", "{}")
        return left[0] + right[0], max(left[1], right[1])
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and (base := template(node.func.value, names))
    ):
        return base[0], "{}"
    return None


def _fstring_part(part: ast.AST, names: dict[str, ast.AST]) -> str:
    """A literal part, or {expr[!r][:spec]}; a bare name of a string built earlier is inlined
    (`msg = f"User-specified ..."; raise ValueError(f"{msg} To allow ...")`)."""
    if isinstance(part, ast.Constant):
        return str(part.value)
    if (
        isinstance(part.value, ast.Name)
        and part.value.id in names
        and part.conversion < 0
        and not part.format_spec
        and (inlined := template(part.value, names))
    ):
        return inlined[0]
    conversion = f"!{chr(part.conversion)}" if part.conversion > 0 else ""
    spec = f":{''.join(_fstring_part(p, {}) for p in part.format_spec.values)}" if part.format_spec else ""
    return f"{{{ast.unparse(part.value)}{conversion}{spec}}}"


def _log_method(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The logger method a call runs: logger.info(...), or log_fn(...) after `log_fn = logger.info`."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in LOG_METHODS and _is_logger(func.value):
        return func.attr
    return aliases.get(func.id) if isinstance(func, ast.Name) else None


def _is_logger(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "logger" in name.lower()


def _raised_class(node: ast.AST) -> str | None:
    """The exception class of `raise X(...)`: a name ending in Error or Exception."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name if re.search(r"(Error|Exception)$", name) else None


def _assignments(scope: ast.AST) -> tuple[dict[str, ast.AST], dict[str, str]]:
    """In a function: name -> value of `name = <str expression>` (the last one wins, as it usually
    is the one right before the raise that uses it), and name -> method of `name = logger.<method>`
    (the first wins: vLLM's stats logger sets `log_fn = logger.info`, then debug when idle)."""
    strings: dict[str, ast.AST] = {}
    aliases: dict[str, str] = {}
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if template(value) is not None:
            strings[name] = value
        elif isinstance(value, ast.Attribute) and value.attr in LOG_METHODS and _is_logger(value.value):
            aliases.setdefault(name, value.attr)
    return strings, aliases


def _answered(tree: ast.AST) -> set[int]:
    """The nodes inside an `except` block that returns and never raises: what such a block logs is
    an error it handled (a request answered with an error response), not one that ends the process."""
    inside: set[int] = set()
    for handler in ast.walk(tree):
        if isinstance(handler, ast.ExceptHandler):
            nodes = [n for statement in handler.body for n in ast.walk(statement)]
            if any(isinstance(n, ast.Return) for n in nodes) and not any(isinstance(n, ast.Raise) for n in nodes):
                inside.update(map(id, nodes))
    return inside


def messages(source: bytes) -> Iterator[tuple[str, str, str, str, tuple[int, int], bool]]:
    """(template, style, call, function, lines, answered) for each logger call and raise with a
    string message.

    call is "logger.<method>" or the raised class; function is the name of the function that
    makes the call ("" at module level); lines, the first and last line of the call, one of which
    a log record names as its [file:line]; answered, whether the call is in an `except` block that
    returns without raising (see _answered). Files that do not parse (Python 2 relics, syntax newer
    than this interpreter) yield nothing.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    answered = _answered(tree)
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    seen: set[int] = set()
    for scope in [*reversed(scopes), tree]:  # innermost first: its names are the right ones
        names, aliases = _assignments(scope) if scope is not tree else ({}, {})
        for node in ast.walk(scope):
            if id(node) in seen:
                continue
            found = _message(node, dict(names), aliases)
            if found:
                seen.add(id(node))
                lines = (node.lineno, node.end_lineno or node.lineno)
                yield (*found, "" if scope is tree else scope.name, lines, id(node) in answered)


def _message(node: ast.AST, names: dict[str, ast.AST], aliases: dict[str, str]) -> tuple[str, str, str] | None:
    method = _log_method(node, aliases)
    if method and node.args:
        found = template(node.args[0], names)
        if found:
            # logging %-formats the message only when it is given arguments
            style = "%" if len(node.args) > 1 and found[1] == "" else found[1]
            return found[0], style, f"logger.{method}"
    if isinstance(node, ast.Raise) and (cls := _raised_class(node.exc)) and node.exc.args:
        found = template(node.exc.args[0], names)
        if found:
            return found[0], found[1], cls
    return None
