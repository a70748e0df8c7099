"""The file list tells the design: data flows one way through the layers of docs/architecture.md,
with no import circle between modules, and each module is short enough to read in one sitting.

Imports are read from the source (top level and inside functions alike), so an import made
lazily to dodge a circle is still seen.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fpemu"

# The layers, bottom up (docs/architecture.md): a component may import its own layer's modules
# and any layer below, never one above.
LAYERS = [
    {"version", "errors", "arguments", "outputs", "parallel", "progress"},
    {"formats"},
    {"arith", "isa"},
    {"codec"},
    {"tables"},
    {"mx", "scaling"},
    {"accumulator"},
    {"train"},
    {"cases", "backends"},
    {"crosscheck", "fit", "probe", "vectors", "teach", "testing"},
    {"cli", "__main__", ""},  # "": the package's own __init__
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}
MAX_LINES = 300


def module_names() -> dict[str, Path]:
    """Dotted module name (without the leading 'fpemu.') -> file."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = module_names()


def imports_of(name: str) -> set[str]:
    """The fpemu modules ``name`` imports (``from X import y`` counts X.y when y is a module)."""
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = [p for p in package if p]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {id(n) for top in tree.body if isinstance(top, ast.If) and "TYPE_CHECKING" in ast.unparse(top.test)
                   for n in ast.walk(top)}  # fmt: skip
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:  # annotations only: never imported at run time
            continue
        if isinstance(node, ast.Import):
            bases = [a.name for a in node.names]
            found |= {b.removeprefix("fpemu.") for b in bases if b == "fpemu" or b.startswith("fpemu.")}
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - (node.level - 1)] + ([node.module] if node.module else [])
            prefix = ".".join(base)
        elif node.module and (node.module == "fpemu" or node.module.startswith("fpemu.")):
            prefix = node.module.removeprefix("fpemu").removeprefix(".")
        else:
            continue
        for alias in node.names:
            sub = f"{prefix}.{alias.name}" if prefix else alias.name
            found.add(sub if sub in MODULES else prefix)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def component(name: str) -> str:
    return name.split(".")[0]


def test_every_component_has_a_layer():
    assert {component(m) for m in MODULES} <= set(RANK), "add the new module to LAYERS and docs/architecture.md"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_flow_down_the_layers(name):
    up = sorted(t for t in GRAPH[name] if RANK[component(t)] > RANK[component(name)])
    assert not up, f"fpemu.{name} imports from a higher layer: {up}"


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_circles():
    assert not import_circles(GRAPH), "import circles"


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between fpemu's components: the package (or top-level module) of the
    importer -> that of the imported, a package's imports of itself left out. The package's own
    ``__init__`` ("", which re-exports the layers) is left out too: importing it from below is
    an upward import, which test_imports_flow_down_the_layers refuses."""
    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name:
            out.setdefault(component(name), set()).update(component(t) for t in targets if t)
    return {c: targets - {c} for c, targets in out.items()}


def test_no_package_import_circles():
    # Modules can be free of circles while their packages are not (fit/__init__ importing
    # probe, probe/cli importing fit.feature_tests): two packages never import each other.
    assert not import_circles(package_graph(GRAPH)), "import circles between packages"


def test_the_checks_can_fail():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    # Lazy imports inside functions are read too (crosscheck imports the accumulator only
    # when a matrix product is compared).
    assert "accumulator" in GRAPH["crosscheck.matmul"]
    assert "codec.encoder" in GRAPH["codec"] and "formats.definition" in GRAPH["formats.registry"]
    # Two packages that import each other through different modules are a circle.
    packages = package_graph({"a": set(), "a.x": {"b.y"}, "b": set(), "b.y": set(), "b.z": {"a"}, "": {"a"}})
    assert packages == {"a": {"b"}, "b": {"a"}} and import_circles(packages) == [["a", "b"]]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_are_short(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"fpemu.{name} has {lines} lines; split it along its concepts"


@pytest.mark.parametrize("package", ["fpemu.train", "fpemu.crosscheck", "fpemu.fit", "fpemu.vectors"])
def test_names_no_longer_re_exported_say_where_they_live(package):
    """A name a package re-exported in 0.1 fails naming the one module that defines it (and
    that module does define it), instead of a bare AttributeError."""
    import importlib

    pkg = importlib.import_module(package)
    assert pkg._MOVED
    for name, where in pkg._MOVED.items():
        target = where if where.startswith("fpemu.") else f"{package}.{where}"
        assert hasattr(importlib.import_module(target), name), (name, target)
        with pytest.raises(AttributeError, match=rf"{package}\.{name} is {target}\.{name} now"):
            getattr(pkg, name)
        assert name not in pkg.__all__
