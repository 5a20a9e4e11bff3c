"""Which functions each vLLM function calls, read with ast (the code is never run): the call graph
that tools/stages derives the start-up and serving functions from."""

from __future__ import annotations

import ast


def _name(node: ast.AST) -> str | None:
    """The simple name a call or reference points at: `f`, `self.f`, `module.f` -> "f"; a method
    named by a string, as vLLM's executors dispatch to their workers (`_run_workers("execute_model")`,
    `collective_rpc("load_model")`) -> "execute_model"."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
        return node.value
    return None


def calls(source: bytes) -> dict[str, set[str]]:
    """{function name: names it calls or hands on as a callback}, for every function of one file.

    A callback counts as a call (`Thread(target=self.run_busy_loop)`,
    `task.add_done_callback(partial(_log_task_completion, ...))`): it runs in the caller's stage; so
    does a method named by a string.
    Functions of one name are merged, as a traceback frame shows only the name.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    graph: dict[str, set[str]] = {}
    for scope in ast.walk(tree):
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        called = graph.setdefault(scope.name, set())
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call):
                continue
            if (callee := _name(node.func)) is not None:
                called.add(callee)
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                if (handed := _name(argument)) is not None:
                    called.add(handed)
    return graph
