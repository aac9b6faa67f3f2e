"""The layers contract beyond what import-linter states (docs/architecture.md; the layers themselves are
checked by `lint-imports` in .ci/run, from pyproject.toml):

- docs/architecture.md's listings are pyproject.toml's contracts (the root's layers, each package's order),
  and the layers hold for imports under ``if TYPE_CHECKING:`` too (import-linter leaves those out);
- no import cycle of any length among roofline's modules, imports under ``if TYPE_CHECKING:`` included (a
  type that needs a cycle to be named is in the wrong module);
- no cycle through a package's ``__init__`` either: importing ``a.b.c`` runs ``a/__init__.py`` and
  ``a/b/__init__.py`` first, so every module implicitly imports each ancestor package (see
  :func:`implicit_edges` for what is exempt, and why);
- no module imports its parent package's ``__init__`` (or any ancestor's), nor the root package;
- no private name (``_x``) imported across modules in src/;
- no ``importlib.import_module`` / ``__import__`` of a roofline module outside the root's lazy table;
- no import cycle among the benchmarks/ scripts;
- no file over 700 lines and no function over 60 lines in src/roofline.

Imports inside functions count (grimp reads every import statement).  The old flat paths
(src/roofline/units.py ...: files that alias their new module in ``sys.modules``) are left out of the graph:
each imports its target, and nothing in the package imports them (checked).
"""
from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "roofline"
MAX_FILE_LINES, MAX_FUNCTION_LINES = 700, 60
#: the old-path shims kept one release: each holds this line
SHIM_MARK = "sys.modules[__name__] = _moved"
Edges = Mapping[str, Iterable[str]]


def shims() -> set[str]:
    return {f"roofline.{p.stem}" for p in SRC.glob("*.py") if SHIM_MARK in p.read_text()}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    g = grimp.build_graph("roofline", include_external_packages=False, exclude_type_checking_imports=False)
    importers = sorted(f"{m} -> {s}" for s in shims() for m in g.find_modules_that_directly_import(s))
    assert not importers, f"modules import an old-path shim (use the new path): {importers}"
    for s in shims():
        g.remove_module(s)
    return g


@pytest.fixture(scope="module")
def edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def implicit_edges(modules: Iterable[str], root: str = "roofline") -> dict[str, set[str]]:
    """``a.b.c`` -> ``a.b`` (and every ancestor package): Python runs each ancestor's ``__init__`` before the
    module.  The root package is exempt: its ``__init__`` is the public face, outside the layers (it imports the
    top of several), and no module of the package imports it (checked by
    :func:`test_no_module_imports_the_root_package`), so no cycle can pass through it."""
    out: dict[str, set[str]] = {}
    for m in modules:
        parts = m.split(".")
        out[m] = {".".join(parts[:i]) for i in range(2, len(parts))}
    out.pop(root, None)
    return out


def strongly_connected(edges: Edges) -> list[list[str]]:
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
        for w in edges.get(v, ()):
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
            if len(comp) > 1 or v in edges.get(v, ()):
                found.append(sorted(comp))

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(old)
    return found


def cycles_through_inits(edges: Edges) -> list[list[str]]:
    """The cycles that pass through a package's ``__init__`` and leave the package, once every module also
    imports its ancestor packages (:func:`implicit_edges`): for each package ``p``, ``p`` then the modules
    outside ``p`` in its cycle (found with ``p``'s own ancestors left out: they have started before ``p``).

    ``p/__init__`` importing its own ``p.a``, which (implicitly) imports ``p``, is ordinary package start-up:
    Python registers ``p`` before running its ``__init__``, and no module reads a name off its own ancestor
    (:func:`test_no_module_imports_its_parent_package`).  A cycle that leaves the package (``p`` -> ``p.a`` ->
    ``x`` -> ``p.b`` -> ``p``) re-enters ``x`` half-run, whichever of them is imported first: that one fails.
    """
    implicit = implicit_edges(edges)
    both = {m: set(edges.get(m, ())) | implicit.get(m, set()) for m in set(edges) | set(implicit)}
    packages = sorted({a for targets in implicit.values() for a in targets})
    found = []
    for p in packages:
        above = {".".join(p.split(".")[:i]) for i in range(1, p.count(".") + 1)}
        pruned = {m: out - above for m, out in both.items() if m not in above}
        for cycle in strongly_connected(pruned):
            outside = [m for m in cycle if m != p and not m.startswith(p + ".")]
            if p in cycle and outside:
                found.append([p, *outside])
    return found


def test_the_cycle_finder_finds_a_cycle_of_three() -> None:
    """The finder itself, on a hand-made graph a -> b -> c -> a, d -> a: one cycle {a, b, c}; d is in none."""
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_cycle_through_a_package_init_is_found() -> None:
    """The bench case by hand: r.bench's __init__ imports r.bench.overhead, which imports r.measurement, which
    imports r.bench.cache; importing r.bench.cache runs r.bench's __init__ first: a cycle that leaves r.bench
    through r.measurement.  r.p's __init__ importing its own r.p.a, and r.p.a importing r.p.q.y, is package
    start-up: no cycle.  r.p.q.x importing r.p.a, which imports r.p.q.y, is one (importing r.p.a first:
    r.p.q's __init__ -> r.p.q.x -> r.p.a half-run).  The root r implies nothing."""
    edges = {"r": {"r.bench", "r.p"}, "r.bench": {"r.bench.overhead", "r.bench.cache"},
             "r.bench.overhead": {"r.measurement"}, "r.measurement": {"r.bench.cache"}, "r.bench.cache": set(),
             "r.p": {"r.p.a"}, "r.p.a": {"r.p.q.y"}, "r.p.q": {"r.p.q.x"}, "r.p.q.x": set(), "r.p.q.y": set()}
    assert implicit_edges(edges, root="r")["r.p.q.y"] == {"r.p", "r.p.q"}
    assert "r" not in implicit_edges(edges, root="r") and "r" not in implicit_edges(edges, root="r")["r.p"]
    assert strongly_connected(edges) == []  # explicit imports alone: no cycle
    assert cycles_through_inits(edges) == [["r.bench", "r.measurement"]]
    edges.update({"r.p.a": set(), "r.p.q.x": {"r.p.a"}})  # r.p.q.x imports r.p.a, which imports nothing: fine
    assert cycles_through_inits(edges) == [["r.bench", "r.measurement"]]
    edges["r.p.a"] = {"r.p.q.y"}  # r.p.q -> r.p.q.x -> r.p.a -> r.p.q.y -> (r.p.q): leaves r.p.q through r.p.a
    assert cycles_through_inits(edges) == [["r.bench", "r.measurement"], ["r.p.q", "r.p.a"]]


def test_no_import_cycle_of_any_length(edges: dict[str, set[str]]) -> None:
    cycles = strongly_connected(edges)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_import_cycle_through_a_package_init(edges: dict[str, set[str]]) -> None:
    cycles = cycles_through_inits(edges)
    assert not cycles, "import cycles through a package's __init__: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_module_imports_the_root_package(edges: dict[str, set[str]]) -> None:
    """The root's __init__ is the public face (it imports render, the catalog, the engine ...): inside the
    package every import names the module that holds the name."""
    bad = sorted(m for m, imported in edges.items() if "roofline" in imported and m != "roofline")
    assert not bad, bad


def test_no_import_cycle_among_the_benchmark_scripts() -> None:
    """benchmarks/*.py import each other as top-level modules (each puts its own directory on sys.path): a
    shared helper lives in a third module (_trace_common.py), not in one script the other imports back."""
    scripts = {p.stem: p for p in (SRC.parents[1] / "benchmarks").glob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in scripts.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                imported.update(a.name.split(".")[0] for a in node.names)
        edges[name] = imported & set(scripts)
    assert edges.get("bench_trace_ranks") == {"_trace_common"}  # the finder sees the scripts' imports
    cycles = strongly_connected(edges)
    assert not cycles, cycles


DOC = SRC.parents[1] / "docs" / "architecture.md"
PYPROJECT = SRC.parents[1] / "pyproject.toml"
#: a layer as a list of (separator, module) pairs: "a : b" -> [("", "a"), (":", "b")]
Layer = list[tuple[str, str]]


def parse_layer(text: str, prefix: str = "") -> Layer:
    """``"roofline.bench : measurement : frontends"`` -> [("", "roofline.bench"), (":", "roofline.measurement"),
    (":", "roofline.frontends")] with ``prefix="roofline."`` (a bare sibling name is the prefix's)."""
    out: Layer = []
    for i, tok in enumerate(text.split()):
        if i % 2:
            assert tok in (":", "|"), f"{text!r}: {tok!r} between siblings (use ' : ' or ' | ')"
            sep = tok
        else:
            out.append((sep if out else "", tok if tok.startswith(prefix) else prefix + tok))
    return out


def doc_blocks(text: str, info: str) -> list[str]:
    """The lines of every fenced block of docs/architecture.md whose info string is ``info``."""
    lines, out, inside = text.splitlines(), [], False
    for line in lines:
        if line.strip() == f"```{info}":
            inside = True
        elif inside and line.strip() == "```":
            inside = False
        elif inside:
            out.append(line)
    return out


def _spec(line: str) -> str:
    """A listing line's layer: the text before two spaces (the description follows them)."""
    return line.strip().split("  ")[0]


def doc_layers(text: str) -> tuple[list[Layer], dict[str, list[Layer]]]:
    """The root's layers (block ``layers``: a line at column 0 is a layer, an indented one continues its
    description) and each package's inner layers (block ``packages``: a package at column 0, its layers
    indented 4, descriptions further)."""
    root = [parse_layer(_spec(line), "roofline.") for line in doc_blocks(text, "layers") if line[:1].strip()]
    packages: dict[str, list[Layer]] = {}
    current = ""
    for line in doc_blocks(text, "packages"):
        if line[:1].strip():
            current = line.strip()
            packages[current] = []
        elif line.startswith("    ") and line[4:5].strip():
            packages[current].append(parse_layer(_spec(line)))
    return root, packages


def contract_layers() -> tuple[list[Layer], dict[str, list[Layer]]]:
    """The same two listings read from pyproject.toml's import-linter contracts."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
        import tomli as tomllib

    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    root = [parse_layer(x) for c in contracts if c["type"] == "layers" and "containers" not in c for x in c["layers"]]
    packages = {c["containers"][0]: [parse_layer(x) for x in c["layers"]]
                for c in contracts if c["type"] == "layers" and "containers" in c}
    return root, packages


def test_the_layer_parser_by_hand() -> None:
    text = ("```layers\nroofline.cli     parse argv\nroofline.bench : measurement\n        sources\n```\n"
            "```packages\nroofline.core\n    stats | arguments    medians\n                         and checks\n"
            "    errors\n```\n")
    root, packages = doc_layers(text)
    assert root == [[("", "roofline.cli")], [("", "roofline.bench"), (":", "roofline.measurement")]]
    assert packages == {"roofline.core": [[("", "stats"), ("|", "arguments")], [("", "errors")]]}


def test_the_documented_layers_are_the_contracts() -> None:
    """docs/architecture.md's two listings and pyproject.toml's contracts: the root's layers, and every
    package's inner order (a package documented without a contract, or the reverse, fails too)."""
    doc_root, doc_packages = doc_layers(DOC.read_text())
    root, packages = contract_layers()
    assert doc_root and doc_root == root
    assert sorted(doc_packages) == sorted(packages)
    for name, layers in packages.items():
        assert doc_packages[name] == layers, name


def layer_violations(edges: Edges, layers: list[Layer], container: str = "") -> list[str]:
    """Imports against a layers contract: from a lower layer up, or between ``|`` siblings of one layer.  A module
    belongs to the layer naming it or its package; modules outside every layer are not checked."""
    where: dict[str, tuple[int, str, str]] = {}
    for i, layer in enumerate(layers):
        independent = any(sep == "|" for sep, _ in layer)
        for _, name in layer:
            full = f"{container}.{name}" if container else name
            where[full] = (i, full, "|" if independent else ":")

    def layer_of(m: str) -> tuple[int, str, str] | None:
        parts = m.split(".")
        return next((where[".".join(parts[:k])] for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in where),
                    None)

    bad = []
    for m, imported in edges.items():
        a = layer_of(m)
        for n in imported:
            b = layer_of(n)
            if a is None or b is None or a[1] == b[1]:
                continue
            if b[0] < a[0] or (a[0] == b[0] and a[2] == "|"):
                bad.append(f"{m} -> {n}")
    return sorted(bad)


def test_the_layers_hold_with_type_checking_imports(edges: dict[str, set[str]]) -> None:
    """import-linter leaves out the imports under ``if TYPE_CHECKING:``; a type named from a higher layer is
    still a dependency on it (the work layer naming llm.spec.LLMSpec was one)."""
    root, packages = contract_layers()
    bad = layer_violations(edges, root)
    for container, layers in packages.items():
        bad += layer_violations(edges, layers, container)
    assert not bad, bad


def test_the_layer_checker_by_hand() -> None:
    """r.a over r.b | r.c: r.b -> r.a (up) and r.b -> r.c (| siblings) are found; r.a.x -> r.b.y is down."""
    edges = {"r.b": {"r.a", "r.c"}, "r.a.x": {"r.b.y"}, "r.c": set()}
    layers = [parse_layer("r.a"), parse_layer("r.b | r.c")]
    assert layer_violations(edges, layers) == ["r.b -> r.a", "r.b -> r.c"]
    inner = [parse_layer("a"), parse_layer("b")]  # inside r.p: a over b
    assert layer_violations({"r.p.a": {"r.p.b"}}, inner, "r.p") == []
    assert layer_violations({"r.p.b": {"r.p.a"}}, inner, "r.p") == ["r.p.b -> r.p.a"]


def test_no_module_imports_its_parent_package(graph) -> None:
    """``from roofline.bench import run_bench`` inside roofline/bench/cpu.py imports the package's __init__;
    ``from roofline.bench import fma`` names the submodule, which grimp records as roofline.bench.fma."""
    bad = sorted(f"{m} -> {n}" for m in graph.modules for n in graph.find_modules_directly_imported_by(m)
                 if m.startswith(n + "."))
    assert not bad, bad


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_imports(code: str, me: str, modules: set[str]) -> list[str]:
    """``from roofline.x import _y`` and ``m._y`` (``m`` a roofline module imported by name) in the source of
    module ``me``.  A private submodule (``from roofline.bench import _kernels``) is private to its package:
    its siblings may import it; a ``__dunder__`` is not private."""
    tree = ast.parse(code)
    aliases: dict[str, str] = {}
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "roofline":
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                if f"{node.module}.{a.name}" in modules:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                    private = private and node.module != me.rpartition(".")[0]
                if private:
                    bad.append(f"{node.lineno}: from {node.module} import {a.name}")
        elif isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name.startswith("roofline.")})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__") and aliases[node.value.id] != me):
            bad.append(f"{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return bad


def test_the_private_import_finder() -> None:
    """By hand, in a file of roofline/bench: a private name from another module (1) and through a module alias
    (2) are found; a sibling private module (3), a public name (4) and a dunder (5) are not."""
    code = ("from roofline.core.units import _shown\n"  # 1
            "from roofline.core import units as u\nu._shown(1)\n"  # 2
            "from roofline.bench import _kernels\n"  # 3
            "from roofline.core.units import format_flops\n"  # 4
            "from roofline.core.version import __version__\n")  # 5
    found = private_imports(code, "roofline.bench.toy", {"roofline.core.units", "roofline.bench._kernels"})
    assert found == ["1: from roofline.core.units import _shown", "3: roofline.core.units._shown"]


def test_no_private_name_imported_across_modules() -> None:
    """A name a second module needs is public (or lives where it is used): src/ only, tests may use the private
    names of the module they test."""
    paths = [p for p in sorted(SRC.rglob("*.py")) if SHIM_MARK not in p.read_text()]
    modules = {_module_name(p) for p in paths}
    bad = [f"{p.relative_to(SRC).as_posix()}:{b}" for p in paths
           for b in private_imports(p.read_text(), _module_name(p), modules)]
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
