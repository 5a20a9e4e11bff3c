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
    return compiled(source)(names)


Evaluator = Callable[[Mapping[str, Any]], Any]


@cache
def compiled(source: str) -> Evaluator:
    """The expression as nested closures, built once: walking its tree for every event of a long log
    cost more than the rest of matching."""
    return _closure(compile_expression(source).body)


def _closure(node: ast.AST) -> Evaluator:  # one case per node type
    match node:
        case ast.Constant(value=value):
            return lambda names: value
        case ast.Name(id=name):
            return lambda names: names.get(name)
        case ast.BoolOp(op=ast.And(), values=values):
            return _all(tuple(map(_closure, values)))
        case ast.BoolOp(op=ast.Or(), values=values):
            return _any(tuple(map(_closure, values)))
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            inner = _closure(operand)
            return lambda names: not inner(names)
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            inner = _closure(operand)
            return lambda names: None if (value := inner(names)) is None else -value
        case ast.BinOp(left=left, op=op, right=right):
            return _binary(_closure(left), _BINARY[type(op)], _closure(right))
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            tests = tuple(_COMPARE[type(comparison)] for comparison in ops)
            return _compare(_closure(left), tests, tuple(map(_closure, comparators)))
        case ast.IfExp(test=test, body=body, orelse=orelse):
            condition, then, otherwise = _closure(test), _closure(body), _closure(orelse)
            return lambda names: then(names) if condition(names) else otherwise(names)
        case ast.List(elts=elements) | ast.Tuple(elts=elements):
            items = tuple(map(_closure, elements))
            return lambda names: [item(names) for item in items]
        case ast.Call(func=ast.Name(id=name), args=args):
            return _call(FUNCTIONS[name], tuple(map(_closure, args)))
    raise ExpressionError(f"unsupported expression node {type(node).__name__}")


def _all(items: tuple[Evaluator, ...]) -> Evaluator:
    def evaluate_all(names: Mapping[str, Any]) -> Any:
        result: Any = True
        for item in items:
            result = item(names)
            if not result:
                return result
        return result

    return evaluate_all


def _any(items: tuple[Evaluator, ...]) -> Evaluator:
    def evaluate_any(names: Mapping[str, Any]) -> Any:
        result: Any = False
        for item in items:
            result = item(names)
            if result:
                return result
        return result

    return evaluate_any


def _binary(left: Evaluator, operation: Callable[[Any, Any], Any], right: Evaluator) -> Evaluator:
    def evaluate_binary(names: Mapping[str, Any]) -> Any:
        a, b = left(names), right(names)
        if a is None or b is None:
            return None
        try:
            return operation(a, b)
        except (ZeroDivisionError, TypeError, OverflowError):
            return None

    return evaluate_binary


def _compare(
    left: Evaluator, tests: tuple[Callable[[Any, Any], Any], ...], comparators: tuple[Evaluator, ...]
) -> Evaluator:
    def evaluate_compare(names: Mapping[str, Any]) -> bool:
        a = left(names)
        for test, comparator in zip(tests, comparators, strict=True):
            b = comparator(names)
            if a is None or b is None:
                return False
            try:
                if not test(a, b):
                    return False
            except TypeError:
                return False
            a = b
        return True

    return evaluate_compare


def _call(function: Callable[..., Any], arguments: tuple[Evaluator, ...]) -> Evaluator:
    def evaluate_call(names: Mapping[str, Any]) -> Any:
        values = [argument(names) for argument in arguments]
        if any(value is None for value in values):
            return None
        try:
            return function(*values)
        except (TypeError, ValueError, OverflowError):
            return None

    return evaluate_call
