"""The file list tells the design: data flows one way through the layers of docs/architecture.md,
with no import circle between modules or packages, and no module reading another's private
names. (A module holds one concept, however long: no line count is imposed.)

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
    {"version", "errors", "arguments", "outputs", "parallel", "progress", "pages"},
    {"formats"},
    {"arith"},
    {"codec"},
    {"tables"},
    {"mx", "scaling"},
    {"accumulator"},
    {"train"},
    {"cases", "backends", "torch"},
    {"crosscheck", "fit", "probe", "vectors", "teach", "testing"},
    {"cli", "__main__", ""},  # "": the package's own __init__
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


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


def package_of(name: str, is_package: bool) -> list[str]:
    """The package a module's relative imports start from, as a list of names."""
    return [p for p in (name.split(".") if is_package else name.split(".")[:-1]) if p]


def from_module(node: ast.ImportFrom, package: list[str]) -> str | None:
    """The fpemu module (dotted, without 'fpemu.') that ``from X import ...`` reads from, or
    None when X is outside fpemu."""
    if node.level:
        base = package[: len(package) - (node.level - 1)] + ([node.module] if node.module else [])
        return ".".join(base)
    if node.module and (node.module == "fpemu" or node.module.startswith("fpemu.")):
        return node.module.removeprefix("fpemu").removeprefix(".")
    return None


def imports_of(name: str) -> set[str]:
    """The fpemu modules ``name`` imports (``from X import y`` counts X.y when y is a module)."""
    path = MODULES[name]
    package = package_of(name, path.name == "__init__.py")
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
        if not isinstance(node, ast.ImportFrom) or (prefix := from_module(node, package)) is None:
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
    # A private name read from another module is flagged, relative or absolute, from a package's
    # own __init__ too; public and dunder names, outside modules and the module itself are not.
    source = "from .c import _x, y, __version__\nfrom fpemu.d import _z\nfrom numpy import _q\n"
    assert private_imports_of("a.b", source, is_package=False) == {"fpemu.a.b -> fpemu.a.c._x", "fpemu.a.b -> fpemu.d._z"}
    assert private_imports_of("a", "from .m import _p\nfrom . import _own\n", is_package=True) == {"fpemu.a -> fpemu.a.m._p"}
    assert private_import_problems({"i -> m._a", "i -> m._b"}, frozenset({"i -> m._b", "i -> m._c"})) == [
        "new: i -> m._a", "no longer occurs, drop it from ALLOWED_PRIVATE_IMPORTS: i -> m._c"]  # fmt: skip


def codec_module_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a module inside fpemu/codec by a module outside it ("importer -> module")."""
    return sorted(f"{dotted(name)} -> {dotted(t)}" for name, targets in graph.items() if component(name) != "codec"
                  for t in targets if t.startswith("codec."))


def test_other_packages_import_the_codec_through_its_package():
    """Outside fpemu/codec the codec is ``fpemu.codec`` and the names its __init__ exports: which
    module inside it holds what, and which path a call takes, stays the codec's business (a
    name another package needs is exported there)."""
    found = codec_module_imports(GRAPH)
    assert not found, "import these through fpemu.codec (export the name there): " + ", ".join(found)
    # the check can fail: a module inside the codec, imported from outside it
    made_up = {"mx.q": {"codec", "codec.encoder"}, "codec.x": {"codec.encoder"}, "": {"codec"}}
    assert codec_module_imports(made_up) == ["fpemu.mx.q -> fpemu.codec.encoder"]


def dotted(name: str) -> str:
    return f"fpemu.{name}" if name else "fpemu"


def private_imports_of(name: str, source: str | None = None, is_package: bool | None = None) -> set[str]:
    """Each ``from X import _y`` in module ``name`` that reads another fpemu module's private
    name, as "importer -> X._y" (dunder names such as __version__ are not private). ``source``
    and ``is_package`` stand in for the module's file, to try the check on made-up code."""
    if source is None:
        source, is_package = MODULES[name].read_text(), MODULES[name].name == "__init__.py"
    package = package_of(name, bool(is_package))
    found = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or (prefix := from_module(node, package)) is None:
            continue
        if prefix == name:  # a module reading its own names is no import of another's
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not (alias.name.startswith("__") and alias.name.endswith("__")):
                found.add(f"{dotted(name)} -> {dotted(prefix)}.{alias.name}")
    return found


def private_import_problems(found: set[str], allowed: frozenset[str]) -> list[str]:
    new = [f"new: {e}" for e in sorted(found - allowed)]
    gone = [f"no longer occurs, drop it from ALLOWED_PRIVATE_IMPORTS: {e}" for e in sorted(allowed - found)]
    return new + gone


def test_no_module_imports_another_modules_private_names():
    """A name with a leading underscore belongs to its module: another module that needs it
    imports a public name instead (make the helper public where it is shared, or import it
    from the module that defines it). The names still read across modules are listed in
    ALLOWED_PRIVATE_IMPORTS, which only shrinks."""
    found = set().union(*(private_imports_of(name) for name in MODULES))
    problems = private_import_problems(found, ALLOWED_PRIVATE_IMPORTS)
    assert not problems, "\n".join(problems)
    assign = next(n for n in ast.parse(Path(__file__).read_text()).body
                  if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "ALLOWED_PRIVATE_IMPORTS")  # fmt: skip
    listed = [ast.literal_eval(e) for e in assign.value.args[0].elts]
    assert listed == sorted(listed), "keep ALLOWED_PRIVATE_IMPORTS sorted"


# Version 0.1.0 was never released, so nothing keeps an old spelling alive: no import hook, no
# metaclass that lets a base class build its subclasses, no table of names that moved. Module
# __getattr__ is for the lazy loading that keeps ``import fpemu`` cheap (tests/test_import_cost.py).
LAZY_PACKAGES = frozenset({"", "mx", "accumulator"})
# The matrix unit's models keep their metaclass until its rebuild (issue 37, item 1) removes it.
METACLASS_STILL_IN = frozenset({"accumulator.model", "mx.mma.model"})


def compatibility_machinery(name: str, source: str) -> list[str]:
    """What in module ``name``'s source keeps an old spelling alive."""
    found, tree = [], ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "meta_path":
            found.append(f"{name}: an import hook (sys.meta_path)")
        elif isinstance(node, ast.ClassDef) and any(k.arg == "metaclass" for k in node.keywords):
            found.append(f"{name}: class {node.name} has a metaclass")
        elif isinstance(node, ast.Name) and node.id in ("_MOVED", "moved_names", "moved_modules"):
            found.append(f"{name}: a moved-name table ({node.id})")
    if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
        found.append(f"{name}: a module __getattr__")
    return list(dict.fromkeys(found))


def test_no_compatibility_machinery():
    problems = []
    for name, path in MODULES.items():
        for problem in compatibility_machinery(name, path.read_text()):
            if name in LAZY_PACKAGES and problem.endswith("a module __getattr__"):
                continue
            if name in METACLASS_STILL_IN and "has a metaclass" in problem:
                continue
            problems.append(problem)
    assert not problems, "\n".join(problems)
    hook = "import sys\nsys.meta_path.append(Finder)\nclass A(metaclass=M): pass\n_MOVED = {}\ndef __getattr__(n): pass\n"
    assert len(compatibility_machinery("x", hook)) == 4  # the check can fail


# Suites about the package as a whole, not one module: named after what they check.
CROSS_CUTTING_TESTS = ("architecture", "import_cost", "packaging")
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def module_under_test(test_name: str, modules: set[str] | None = None) -> str | None:
    """The module a test file is named after: the longest run of its name's leading words
    that is an fpemu module or package (``test_codec_dispatch`` -> ``codec.dispatch``), or
    a file of benchmarks/ or scripts/; a cross-cutting suite names itself; None otherwise."""
    if modules is None:
        modules = set(MODULES) | {f"{d}.{p.stem}" for d in ("benchmarks", "scripts") for p in (ROOT / d).glob("*.py")}
    flat = {m.replace(".", "_"): m for m in modules}
    words = test_name.removeprefix("test_").split("_")
    for n in range(len(words), 0, -1):
        if "_".join(words[:n]) in flat:
            return flat["_".join(words[:n])]
    name = test_name.removeprefix("test_")
    return next((t for t in CROSS_CUTTING_TESTS if name == t or name.startswith(t + "_")), None)


def flat_test_name(path: Path) -> str:
    """A test file's name as if it sat in tests/ itself: tests/codec/fast/test_top_half.py reads
    test_codec_fast_top_half (the tree under tests/ mirrors fpemu's)."""
    rel = path.relative_to(TESTS)
    return "_".join(("test",) + rel.parent.parts + (rel.stem.removeprefix("test_"),))


# tests/ mirrors fpemu/ (tests/<package>/test_<module>.py, each folder a package so that names
# may repeat), except fpemu.torch: its tests stay flat as tests/test_torch_*.py, since tests/ is
# on sys.path and a folder tests/torch/ would be found by ``import torch`` (a package named torch
# with an __init__.py; a namespace package without one, where pytest.importorskip("torch") would
# then import it instead of skipping). No folder under tests/ may be named after a module the
# suite imports by name.
SHADOWED = frozenset({"torch", "numpy", "ml_dtypes", "dask", "hypothesis", "matplotlib", "gfloat",
                      "playwright", "research", "fpemu", "scripts", "benchmarks"})


def shadowing_test_folders() -> list[str]:
    """The folders under tests/ named after a module the suite imports by name."""
    helpers = {p.stem for p in TESTS.glob("*.py")}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name not in ("data", "__pycache__")}
    assert {"codec", "mx", "accumulator", "train"} <= folders  # the check sees the folders
    return sorted(folders & (SHADOWED | helpers))


def research_modules() -> set[str]:
    """Dotted names of research/'s modules (without the leading 'research.')."""
    base = ROOT / "research"
    return {".".join(p.relative_to(base).with_suffix("").parts) for p in base.rglob("*.py")
            if "tests" not in p.relative_to(base).parts and p.stem != "__init__"}


def unnamed_research_tests() -> list[str]:
    """research/<study>/tests/test_<module>.py files (the research's tests sit beside it) that
    name no module of research/<study>/."""
    found = sorted((ROOT / "research").rglob("tests/test_*.py"))
    assert found  # the check sees the files
    modules = research_modules()
    flat = lambda p: "_".join(("test",) + p.parent.parent.relative_to(ROOT / "research").parts  # noqa: E731
                              + (p.stem.removeprefix("test_"),))
    return [str(p.relative_to(ROOT)) for p in found if module_under_test(flat(p), modules) is None]


def test_test_files_are_named_after_the_module_they_test():
    unnamed = [str(p.relative_to(TESTS)) for p in sorted(TESTS.rglob("test_*.py"))
               if module_under_test(flat_test_name(p)) is None]
    assert not unnamed, ("name these after the module they test (tests/<package>/test_<module>.py, or "
                         f"tests/test_<package>_<module>...): {unnamed}")
    assert not unnamed_research_tests(), f"name these after the research module they test: {unnamed_research_tests()}"
    assert not shadowing_test_folders(), f"these folders of tests/ shadow imported modules: {shadowing_test_folders()}"
    assert flat_test_name(TESTS / "codec" / "fast" / "test_top_half.py") == "test_codec_fast_top_half"
    assert module_under_test("test_codec_fast_top_half") == "codec.fast.top_half"
    assert module_under_test("test_codec_dispatch") == "codec.dispatch"
    assert module_under_test("test_accumulator_units_hwdata") == "accumulator.units"
    assert module_under_test("test_benchmarks_compare") == "benchmarks.compare"
    assert module_under_test("test_mmasim_rules") is None and module_under_test("test_golden_layouts") is None




# The private names one module still reads from another (test_no_module_imports_another_modules_private_names):
# a list that only shrinks. Make a shared helper public, or import a name from the module
# that defines it, and drop its line here.
ALLOWED_PRIVATE_IMPORTS = frozenset({
    "fpemu.backends -> fpemu.backends.devices._presets",
    "fpemu.backends -> fpemu.backends.devices._torch_matmul",
    "fpemu.crosscheck.matmul -> fpemu.backends._torch_matmul",
    "fpemu.fit.feature_tests -> fpemu.backends._presets",
    "fpemu.fit.search -> fpemu.backends._presets",
})  # fmt: skip
