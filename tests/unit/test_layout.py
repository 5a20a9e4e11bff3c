"""The package's import graph keeps the data flow's shape: the fast path stays behind one door."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "advisor"
# Who may use the accelerators: the pipeline (the one place stages are composed) and streaming,
# which shares the fast path's candidate search; and the fast path itself.
FAST_DOOR = ("advisor.pipeline", "advisor.stream.")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """The advisor modules a file imports (absolute imports, as the package writes them)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; the package imports absolutely, to be moved by grep")
    return {name for name in names if name.startswith("advisor")}


MODULES = sorted(PACKAGE.rglob("*.py"))
NAMES = {module_name(path) for path in MODULES}
# The stages in the order the data flows; a module may import its own stage's and earlier ones, never a
# later one. plan stands before the log pipeline (rules size with it); the entry points come last.
STAGES = [
    ("advisor.defaults", "advisor.usage", "advisor.caching", "advisor.ingest", "advisor.plan"),
    ("advisor.parse",),
    ("advisor.timeline",),
    ("advisor.rules",),
    ("advisor.command",),
    ("advisor.report",),
    ("advisor.fast",),
    ("advisor.pipeline",),
    ("advisor.scrape",),
    ("advisor.stream",),
    ("advisor.live", "advisor.compare", "advisor.subcommands", "advisor.cli", "advisor.syslog_ng", "advisor.__main__"),
]


def stage(module: str) -> int:
    if module == "advisor":  # the library's front: it imports what it exports
        return len(STAGES)
    return next(
        i for i, names in enumerate(STAGES) for name in names if module == name or module.startswith(name + ".")
    )


def imports(path: Path) -> set[str]:
    """The package's modules a file imports: `from advisor.x import y` is advisor.x.y when y is a module."""
    out = set()
    for name in imported_modules(path):
        while name not in NAMES and "." in name:
            name = name.rsplit(".", 1)[0]
        out.add(name)
    out.discard(module_name(path))
    return out


GRAPH = {module_name(path): imports(path) - {"advisor"} for path in MODULES}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_only_the_pipeline_and_streaming_import_the_fast_path(path):
    importer = module_name(path)
    if importer.startswith(("advisor.fast", *FAST_DOOR)):
        return
    fast = sorted(name for name in imported_modules(path) if name == "advisor.fast" or name.startswith("advisor.fast."))
    assert not fast, f"{importer} imports {fast}: go through advisor.pipeline"


def test_every_stage_is_one_subpackage_deep():
    deeper = [p for p in MODULES if len(p.relative_to(PACKAGE).parts) > 3]
    assert not deeper, deeper
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == {
        "ingest",
        "parse",
        "timeline",
        "rules",
        "report",
        "fast",
        "stream",
        "live",
        "scrape",
        "plan",
    }


@pytest.mark.parametrize("path", sorted((PACKAGE / "plan").glob("*.py")), ids=lambda p: module_name(p))
def test_plan_reads_no_logs(path):
    # The planner stands before launch: it needs none of the log pipeline's modules (nor their import time),
    # only vLLM's defaults, which the log rules share.
    outside = sorted(
        name for name in imported_modules(path) if not name.startswith(("advisor.plan", "advisor.defaults"))
    )
    assert not outside, f"{module_name(path)} imports {outside}"


def test_json_and_markdown_reports_do_not_import_rich():
    # rich takes longer to import than a small log's JSON report takes to write.
    code = (
        "import sys; from advisor.report.formats import render; from advisor import analyze; "
        "render('markdown', [analyze(b'')]); render('json', [analyze(b'')]); assert 'rich' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_import_runs_back_up_the_stages():
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if stage(target) > stage(module)
    )
    assert not upward, upward


def test_the_import_graph_has_no_circle():
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path[path.index(module) :], module))
        if module not in done:
            for target in sorted(GRAPH.get(module, ())):
                visit(target, (*path, module))
            done.add(module)

    for module in sorted(GRAPH):
        visit(module, ())


@pytest.mark.parametrize("path", sorted((PACKAGE / "report" / "formats").glob("*.py")), ids=lambda p: module_name(p))
def test_formats_import_only_the_report_contract(path):
    allowed = ("advisor.report.contract", "advisor.report.formats", "advisor.report.about", "advisor.report.writer")
    outside = sorted(name for name in imports(path) if not name.startswith(allowed))
    if module_name(path) == "advisor.report.formats.sarif":  # SARIF's driver describes every rule of the set
        outside.remove("advisor.rules.schema")
    assert not outside, f"{module_name(path)} imports {outside}"
