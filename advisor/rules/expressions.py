"""A small, safe expression language for rule conditions and flag values (never Python's eval)."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any


class ExpressionError(ValueError):
    """An expression uses syntax or a name the rule language does not allow."""


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "int": int,
    "round": round,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "str": str,
}


@cache
def compile_expression(source: str) -> ast.Expression:
    """Parse and check an expression once; raise ExpressionError for anything outside the language."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionError(f"{source!r}: {error.msg}") from None
    allowed = (
        ast.Expression,
        ast.BoolOp,
        ast.And,
        ast.Or,
        ast.UnaryOp,
        ast.Not,
        ast.USub,
        ast.BinOp,
        ast.Compare,
        ast.Name,
        ast.Load,
        ast.Constant,
        ast.Call,
        ast.List,
        ast.Tuple,
        ast.IfExp,
        *_BINARY,
        *_COMPARE,
    )
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            raise ExpressionError(f"{source!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS):
            raise ExpressionError(f"{source!r}: only {', '.join(sorted(FUNCTIONS))} may be called")
    return tree


def evaluate(source: str, names: Mapping[str, Any]) -> Any:
    """Evaluate over `names`. An unknown name is None; anything computed from None is None or False."""
    return _eval(compile_expression(source).body, names)


def _eval(node: ast.AST, names: Mapping[str, Any]) -> Any:  # noqa: C901  (one case per node type)
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            return names.get(name)
        case ast.BoolOp(op=ast.And(), values=values):
            result = True
            for item in values:
                result = _eval(item, names)
                if not result:
                    return result
            return result
        case ast.BoolOp(op=ast.Or(), values=values):
            result = False
            for item in values:
                result = _eval(item, names)
                if result:
                    return result
            return result
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return not _eval(operand, names)
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            value = _eval(operand, names)
            return None if value is None else -value
        case ast.BinOp(left=left, op=op, right=right):
            a, b = _eval(left, names), _eval(right, names)
            if a is None or b is None:
                return None
            try:
                return _BINARY[type(op)](a, b)
            except (ZeroDivisionError, TypeError, OverflowError):
                return None
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            a = _eval(left, names)
            for comparison, comparator in zip(ops, comparators, strict=True):
                b = _eval(comparator, names)
                if a is None or b is None:
                    return False
                try:
                    if not _COMPARE[type(comparison)](a, b):
                        return False
                except TypeError:
                    return False
                a = b
            return True
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return _eval(body if _eval(test, names) else orelse, names)
        case ast.List(elts=elements) | ast.Tuple(elts=elements):
            return [_eval(e, names) for e in elements]
        case ast.Call(func=ast.Name(id=name), args=args):
            values = [_eval(a, names) for a in args]
            if any(v is None for v in values):
                return None
            try:
                return FUNCTIONS[name](*values)
            except (TypeError, ValueError, OverflowError):
                return None
    raise ExpressionError(f"unsupported expression node {type(node).__name__}")
