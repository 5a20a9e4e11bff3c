"""Logged and raised message formats in one Python source, read with ast (the code is never run)."""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator

LOG_METHODS = {"info", "warning", "warn", "error", "debug", "exception", "critical",
               "info_once", "warning_once", "debug_once", "error_once"}


def template(node: ast.AST, names: dict[str, ast.AST] | None = None) -> tuple[str, str] | None:
    """(template, style) of a message expression; style is "%", "{}" or "" (no placeholders).

    f-string interpolations become {expr[!r][:spec]}; %-formats keep their %d/%.2f; a name
    assigned a string earlier in the same function stands for that string.
    """
    names = names or {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, ""
    if isinstance(node, ast.JoinedStr):
        return "".join(_fstring_part(part) for part in node.values), "{}"
    if isinstance(node, ast.Name) and node.id in names:
        return template(names[node.id])
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
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and (base := template(node.func.value, names))):
        return base[0], "{}"
    return None


def _fstring_part(part: ast.AST) -> str:
    if isinstance(part, ast.Constant):
        return str(part.value)
    conversion = f"!{chr(part.conversion)}" if part.conversion > 0 else ""
    spec = f":{''.join(_fstring_part(p) for p in part.format_spec.values)}" if part.format_spec else ""
    return f"{{{ast.unparse(part.value)}{conversion}{spec}}}"


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


def _string_assignments(scope: ast.AST) -> dict[str, ast.AST]:
    """name -> value of `name = <str expression>` in a function (the last one wins, as it usually
    is the one right before the raise that uses it)."""
    found: dict[str, ast.AST] = {}
    for node in ast.walk(scope):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and template(node.value) is not None):
            found[node.targets[0].id] = node.value
    return found


def messages(source: bytes) -> Iterator[tuple[str, str, str]]:
    """(template, style, call) for each logger call and raise with a string message.

    call is "logger.<method>" or the raised class. Files that do not parse (Python 2 relics,
    syntax newer than this interpreter) yield nothing.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    seen: set[int] = set()
    for scope in [*reversed(scopes), tree]:  # innermost first: its names are the right ones
        names = _string_assignments(scope) if scope is not tree else {}
        for node in ast.walk(scope):
            if id(node) in seen:
                continue
            found = _message(node, names)
            if found:
                seen.add(id(node))
                yield found


def _message(node: ast.AST, names: dict[str, ast.AST]) -> tuple[str, str, str] | None:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in LOG_METHODS and _is_logger(node.func.value) and node.args):
        found = template(node.args[0], names)
        if found:
            # logging %-formats the message only when it is given arguments
            style = "%" if len(node.args) > 1 and found[1] == "" else found[1]
            return found[0], style, f"logger.{node.func.attr}"
    if isinstance(node, ast.Raise) and (cls := _raised_class(node.exc)) and node.exc.args:
        found = template(node.exc.args[0], names)
        if found:
            return found[0], found[1], cls
    return None
