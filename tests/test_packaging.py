"""fpemu as a package people install (issue 42): the package list and its data, the wheel and
the sdist as the build backend makes them, a type checker seeing fpemu's annotations (py.typed),
and the version the changelog describes. CI (.ci/run) also installs the wheel into a fresh
virtual environment and runs the README's tour there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import fpemu

ROOT = Path(__file__).resolve().parents[1]
# What a checkout holds that is no source: never copied into the build tree.
NOT_SOURCE = shutil.ignore_patterns(".git", "__pycache__", "*.py[cod]", "build", "dist", "*.egg-info", ".pytest_cache",
                                    ".hypothesis", "out")
SDIST_DIRECTORIES = ("tests", "research", "scripts", "benchmarks", "docs", ".ci")


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_is_listed():
    """pyproject lists the packages by name (docs/ ships as fpemu.docs): a new package of the
    tree must join the list, or the wheel would lack it."""
    tree = sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "fpemu").rglob("__init__.py"))
    setuptools = pyproject()["tool"]["setuptools"]
    assert sorted(setuptools["packages"]) == sorted(tree + ["fpemu.docs"])
    assert setuptools["package-dir"] == {"fpemu.docs": "docs"}
    assert "py.typed" in setuptools["package-data"]["fpemu"] and (ROOT / "fpemu" / "py.typed").is_file()


def test_metadata_says_who_and_where():
    project = pyproject()["project"]
    assert project["authors"] and {"Typing :: Typed", "Programming Language :: Python :: 3.13"} <= set(project["classifiers"])
    urls = project["urls"]
    assert {"Homepage", "Documentation", "Repository", "Changelog", "Issues"} <= set(urls)
    bases = {re.match(r"https://github\.com/[\w-]+/[\w-]+", u).group(0) for u in urls.values()}
    assert len(bases) == 1  # one placeholder for every link


def test_the_changelog_describes_this_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert fpemu.__version__ == "0.2.0"
    heads = re.findall(r"^## \[?([0-9.]+)\]?", text, re.MULTILINE)
    assert heads[0] == fpemu.__version__ and "0.1.0" in heads


def build(kind: str, tmp_path: Path) -> Path:
    """The sdist or wheel the build backend makes of a copy of this tree."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=NOT_SOURCE)  # (MANIFEST.in's grafts act on the wheel too)
    code = f"from setuptools import build_meta as b; print(b.build_{kind}({str(tmp_path / 'dist')!r}))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return tmp_path / "dist" / done.stdout.strip().splitlines()[-1]


def test_the_sdist_carries_what_its_tests_read(tmp_path):
    """Every file under tests/ (conftest.py, helpers, data, at any depth), research/, scripts/,
    benchmarks/ and docs/ is in the sdist: its tests collect (CI collects them)."""
    sdist = build("sdist", tmp_path)
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    tree = tmp_path / "tree"
    wanted = {str(p.relative_to(tree)) for d in SDIST_DIRECTORIES for p in (tree / d).rglob("*") if p.is_file()}
    assert "tests/conftest.py" in wanted and any(n.startswith("tests/data/") for n in wanted)
    assert sorted(wanted - names) == []
    assert {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in", "fpemu/py.typed"} <= names


def test_the_wheel_carries_the_docs_and_the_type_marker(tmp_path):
    wheel = build("wheel", tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "fpemu").rglob("*.py")}
    assert modules <= names
    pages = {f"fpemu/docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages <= names and "fpemu/py.typed" in names and "fpemu/teach/static/index.html" in names
    assert {n for n in names if n.startswith("fpemu/docs/")} == pages  # the pages, not their figures
    assert wheel.stat().st_size < 1 << 20
    assert not any(n.startswith(("tests/", "research/", "docs/")) for n in names)  # only the package


@pytest.mark.slow
def test_the_sdists_tests_collect(tmp_path):
    """pytest --co in the unpacked sdist: every test file imports (no collection error)."""
    sdist = build("sdist", tmp_path)
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data") if sys.version_info >= (3, 12) else tar.extractall(tmp_path / "unpacked")
    top = next((tmp_path / "unpacked").iterdir())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"], cwd=top,
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0 and "error" not in done.stdout.splitlines()[-1], done.stdout[-3000:]


def test_a_type_checker_sees_fpemus_types(tmp_path):
    """With py.typed, mypy reads fpemu's annotations (without it: "module is installed, but
    missing library stubs or py.typed marker", and every call is Any). fpemu is found on the
    import path as an installed package is, not as source."""
    pytest.importorskip("mypy")
    snippet = tmp_path / "snippet.py"
    snippet.write_text("import fpemu\n"
                       "reveal_type(fpemu.encode([1.0], 'e4m3'))\n"
                       "reveal_type(fpemu.get_format('e4m3').max)\n"
                       "reveal_type(fpemu.mx.quantize([1.0, 2.0], 'mxfp4'))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--cache-dir", str(tmp_path / "cache"),
                           str(snippet)], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    revealed = re.findall(r'Revealed type is "(.*)"', done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert revealed[0].startswith("numpy.ndarray[") and revealed[1] == "float"
    assert revealed[2] == "fpemu.mx.array.BlockArray"


def ci_lines(marker: str = "# README") -> list[str]:
    return [line.split(marker)[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
            if line.rstrip().endswith(marker)]


def test_the_readme_test_command_is_what_ci_runs():
    """README.md's test command is the one .ci/run runs: the same extras installed, the same
    pytest options (issue 42, item 10: the README installed .[test], CI .[test,plot,dask])."""
    install, run = ci_lines()
    readme = (ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines() if "python -m pytest -n auto" in line)
    extras = re.search(r'-e "\.\[([\w,]+)\]"', install).group(1)
    assert f'pip install -e ".[{extras}]"' in command and set(extras.split(",")) >= {"test", "plot", "dask"}
    ci_options = run.split("python3 -m pytest", 1)[1].split("||")[0].split()
    readme_options = command.split("python -m pytest", 1)[1].split()
    assert [o for o in ci_options if o != "-q"] == readme_options
