"""The layers contract beyond what import-linter states (docs/architecture.md; the layers themselves are
checked by `lint-imports` in .ci/run, from pyproject.toml):

- no import cycle of any length among roofline's modules;
- no module imports its parent package's ``__init__`` (or any ancestor's);
- no ``importlib.import_module`` / ``__import__`` of a roofline module outside the root's lazy table;
- no file over 700 lines and no function over 60 lines in src/roofline.

Imports inside functions count (grimp reads every import statement); only imports under
``if TYPE_CHECKING:`` are left out, as in the contract.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "roofline"
MAX_FILE_LINES, MAX_FUNCTION_LINES = 700, 60


@pytest.fixture(scope="module")
def graph():
    grimp = pytest.importorskip("grimp")
    return grimp.build_graph("roofline", include_external_packages=False, exclude_type_checking_imports=True)


def strongly_connected(graph) -> list[list[str]]:
    """The import cycles: Tarjan's strongly connected components of more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.find_modules_directly_imported_by(v):
                found.append(sorted(comp))

    import sys

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10 * len(graph.modules)))
    try:
        for v in sorted(graph.modules):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(old)
    return found


def test_the_cycle_finder_finds_a_cycle_of_three() -> None:
    """The finder itself, on a hand-made graph a -> b -> c -> a, d -> a: one cycle {a, b, c}; d is in none."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

    class Toy:
        modules = set(edges)

        @staticmethod
        def find_modules_directly_imported_by(m: str) -> set[str]:
            return edges[m]

    assert strongly_connected(Toy) == [["a", "b", "c"]]


def test_no_import_cycle_of_any_length(graph) -> None:
    cycles = strongly_connected(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_module_imports_its_parent_package(graph) -> None:
    """``from roofline.bench import run_bench`` inside roofline/bench/cpu.py imports the package's __init__;
    ``from roofline.bench import fma`` names the submodule, which grimp records as roofline.bench.fma."""
    bad = sorted(f"{m} -> {n}" for m in graph.modules for n in graph.find_modules_directly_imported_by(m)
                 if m.startswith(n + "."))
    assert not bad, bad


#: calls of import_module / __import__ whose argument is not a literal, each with why it is not a roofline module
DYNAMIC_IMPORTS = {
    ("core/errors.py", "require"): "imports an optional third-party dependency by name",
    ("frontends/target.py", "_import_module"): "imports the user's own module (roofline torch MODULE:CALLABLE)",
}


def _import_calls(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    """(innermost enclosing function's name, call) of every importlib.import_module / __import__ call."""
    where: dict[int, tuple[str, ast.Call]] = {}
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in scopes:  # ast.walk is breadth-first: an inner function comes after the one around it
        for node in ast.walk(scope):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if name in ("import_module", "__import__"):
                    where[id(node)] = (getattr(scope, "name", "<module>"), node)
    return list(where.values())


def test_no_dynamic_import_of_roofline_modules_outside_the_lazy_table() -> None:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "__init__.py":
            continue  # the root's lazy attribute table
        for func, call in _import_calls(ast.parse(path.read_text())):
            arg = call.args[0] if call.args else None
            literal = (arg.value if isinstance(arg, ast.Constant) else
                       "".join(str(v.value) for v in arg.values if isinstance(v, ast.Constant))
                       if isinstance(arg, ast.JoinedStr) else None)
            if literal is not None:
                if literal.startswith("roofline"):
                    bad.append(f"{rel}:{call.lineno} ({func}) imports {literal!r}")
            elif (rel, func) not in DYNAMIC_IMPORTS:
                bad.append(f"{rel}:{call.lineno} ({func}): a computed module name, not listed in DYNAMIC_IMPORTS")
    assert not bad, bad


def test_no_file_or_function_over_the_size_limits() -> None:
    big_files, big_functions = [], []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(SRC).as_posix()
        if len(text.splitlines()) > MAX_FILE_LINES:
            big_files.append(f"{rel}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - min([node.lineno] + [d.lineno for d in node.decorator_list]) + 1
                if n > MAX_FUNCTION_LINES:
                    big_functions.append(f"{rel}:{node.lineno} {node.name}: {n} lines")
    assert not big_files and not big_functions, big_files + big_functions
