"""Run gfloat's own test suite with its conversions done by fpemu, and print one summary line.

    python scripts/run_gfloat_suite.py --gfloat-src /tmp/gfloat_src --commit 8ebe45a
    python scripts/run_gfloat_suite.py --gfloat-src PATH -- -k round   # extra pytest arguments

``--gfloat-src`` is a checkout (or ``git archive``) of github.com/graphcore-research/gfloat,
its tests under ``test/`` or ``tests/``. gfloat's pytest suite runs in a subprocess with the
plugin ``scripts/gfloat_adapter_plugin.py``, which replaces gfloat's conversion functions
(round_float, round_ndarray, encode_float, encode_ndarray, decode_float, decode_ndarray) by
calls to ``fpemu.quantize``/``encode``/``decode`` on the fpemu twin of each gfloat format
(see the plugin's docstring for the translation). A test whose format fpemu refuses (IEEE
P3109 signed P = K, ruled out by the interim report v4.0, section 3.1) is skipped as ``not
expressible`` and counted apart.

By default the gfloat library imported is the checkout's own ``src/`` (the tests and the
library of one commit); ``--installed`` uses the installed gfloat instead (then the checkout
should be the commit of that release: 0.5.2 is commit 8ebe45a, the repository has no tag for
it). Test modules that import a package not installed here (jax, torchao, array_api_strict,
...) are left out and named. The exit status is non-zero if a test failed (or pytest could
not run).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = "gfloat_adapter_plugin"


def test_dir(src: Path) -> Path:
    for name in ("test", "tests"):
        if (src / name).is_dir():
            return src / name
    raise SystemExit(f"no test/ or tests/ directory in {src}")


def imported_packages(path: Path) -> set[str]:
    """The top-level packages a test module imports at module level."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def missing_packages(path: Path, own: set[str]) -> list[str]:
    """The packages a test module needs that are not installed (the package under test and
    modules next to the tests are there by construction)."""
    local = {p.stem for p in path.parent.glob("*.py")}
    return sorted(name for name in imported_packages(path) - own - local
                  if importlib.util.find_spec(name) is None)


def gfloat_version(src: Path, installed: bool) -> str:
    if installed:
        from importlib.metadata import version

        return version("gfloat")
    pyproject = src / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        found = tomllib.loads(pyproject.read_text()).get("project", {}).get("version")
        if found:
            return str(found)
    return "unknown"


def gfloat_commit(src: Path, given: str | None) -> str:
    if given:
        return given
    if (src / ".git").exists():
        run = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
        if run.returncode == 0:
            return run.stdout.strip()
    return "unknown commit"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gfloat-src", required=True, type=Path, help="checkout of gfloat's repository")
    parser.add_argument("--commit", help="the commit the checkout is (read with git where it is a clone)")
    parser.add_argument("--installed", action="store_true",
                        help="import the installed gfloat, not the checkout's src/")
    parser.add_argument("pytest_args", nargs="*", help="further pytest arguments (after --)")
    args = parser.parse_args(argv)
    src = args.gfloat_src.resolve()
    tests = test_dir(src)
    installed = args.installed or not (src / "src" / "gfloat").is_dir()

    left_out = {}
    for module in sorted(tests.glob("test_*.py")):
        missing = missing_packages(module, {"gfloat"})
        if missing:
            left_out[module.name] = missing

    paths = [str(ROOT / "scripts"), str(ROOT)] + ([] if installed else [str(src / "src")])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH")] if p])
    with tempfile.TemporaryDirectory(prefix="gfloat-fpemu-") as tmp:
        result_file = Path(tmp) / "result.json"
        env["GFLOAT_ADAPTER_RESULT"] = str(result_file)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                   "-p", PLUGIN, "--rootdir", str(src)]
        command += [f"--ignore={tests / name}" for name in left_out]
        chosen = [a for a in args.pytest_args if not a.startswith("-") and (src / a.split("::")[0]).exists()]
        command += ([] if chosen else [str(tests)]) + args.pytest_args  # paths given: those alone
        run = subprocess.run(command, cwd=src, env=env, check=False)
        if not result_file.is_file():
            print(f"gfloat suite through fpemu: pytest ended with status {run.returncode} and no result")
            return 2
        result = json.loads(result_file.read_text())

    where = "installed" if installed else f"{src / 'src'}"
    print(f"gfloat library: {where}; fpemu {result['fpemu']} replaced {len(result['replaced'])} bindings: "
          + ", ".join(result["replaced"]))
    print("fpemu calls: " + ", ".join(f"{name} {count}" for name, count in sorted(result["calls"].items())))
    for test, reason in sorted(result["not_expressible"].items()):
        print(f"not expressible: {test}: {reason.removeprefix('not expressible: ')}")
    counts = result["outcomes"]
    skipped = (", ".join(f"{name} (needs {', '.join(needs)})" for name, needs in left_out.items())
               or "none")
    others = f", {counts['skipped']} skipped otherwise" if counts.get("skipped") else ""
    print(f"gfloat {gfloat_version(src, installed)} ({gfloat_commit(src, args.commit)}) test suite through fpemu: "
          f"{counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
          f"{counts.get('not_expressible', 0)} not expressible{others}; modules left out: {skipped}")
    if counts.get("failed", 0):
        return 1
    return run.returncode  # 0, or pytest's own trouble (interrupted, usage, no tests)


if __name__ == "__main__":
    sys.exit(main())
