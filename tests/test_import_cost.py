"""``import fpemu`` loads the core only (formats, codec, mx, accumulator, scaling): the command
line, training, the explorer, the checks against the outside world, Dask and matplotlib load
when first named (docs/architecture.md, "Imports"). Each test runs a fresh interpreter, as an
import already made by another test would hide a regression."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fpemu

ROOT = Path(__file__).resolve().parents[1]

# Modules that must not be loaded by ``import fpemu``: real names, each a way back to the old cost.
NOT_AT_IMPORT = [
    "fpemu.cli", "fpemu.mx.cli", "fpemu.accumulator.cli",  # the argparse command lines
    "fpemu.train", "fpemu.train.cli", "fpemu.train.gpt", "fpemu.train.plots",
    "fpemu.teach", "fpemu.teach.cli", "fpemu.teach.server", "fpemu.teach.plots",
    "fpemu.fit", "fpemu.fit.cli", "fpemu.fit.feature_tests", "research",
    "fpemu.probe", "fpemu.probe.cli",
    "fpemu.crosscheck", "fpemu.crosscheck.cli",
    "fpemu.vectors", "fpemu.vectors.cli",
    "fpemu.testing", "fpemu.backends", "fpemu.cases", "fpemu.tables", "fpemu.progress", "fpemu.torch",
    "argparse", "dask", "dask.array", "matplotlib", "matplotlib.pyplot", "http.server", "torch",
    "importlib.metadata",
]
CORE = ["fpemu.formats", "fpemu.codec", "fpemu.mx", "fpemu.accumulator", "fpemu.scaling"]


def python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_fpemu_loads_the_core_only():
    # (What the interpreter and numpy load before fpemu is not fpemu's cost.)
    before, after = json.loads(python("import json, sys, numpy; before = sorted(sys.modules); import fpemu; "
                                      "print(json.dumps([before, sorted(sys.modules)]))"))
    loaded = set(after) - set(before)
    fpemu_modules = [m for m in after if m == "fpemu" or m.startswith("fpemu.")]
    assert set(CORE) <= set(fpemu_modules)
    assert sorted(set(NOT_AT_IMPORT) & loaded) == [], "import fpemu loads what it should load on first use"
    assert [m for m in fpemu_modules if m.endswith(".cli")] == []


def test_what_loads_on_first_use_is_still_there():
    # Every name of fpemu.__all__ through `from fpemu import`, and the lazy packages by attribute.
    out = python(
        "import sys\n"
        "import fpemu\n"
        f"exec('from fpemu import ' + ', '.join({fpemu.__all__!r}))\n"
        "assert 'fpemu.train' in sys.modules and 'fpemu.testing' in sys.modules\n"
        "assert fpemu.vectors.cast_vectors and fpemu.testing.assert_bits_equal and fpemu.train.run\n"
        "assert fpemu.fit.fit and fpemu.probe.probe is fpemu.fit.probe and fpemu.teach.describe_code\n"
        "assert fpemu.crosscheck and fpemu.backends.fake_device and fpemu.cases and fpemu.cli.main\n"
        "assert fpemu.mx.describe and fpemu.mx.cmd_mx and fpemu.accumulator.cmd_gemm_error\n"
        "print('ok')\n"
    )
    assert out.split() == ["ok"]


def test_every_top_level_module_is_an_attribute():
    names = sorted(p.stem if p.suffix else p.name for p in (ROOT / "fpemu").iterdir()
                   if (p.suffix == ".py" and p.stem not in ("__init__", "__main__")) or (p / "__init__.py").exists())
    out = python(f"import fpemu; print([n for n in {names!r} if getattr(fpemu, n, None) is None])")
    assert out.strip() == "[]", "add the new module to fpemu._LAZY"
    try:
        fpemu.no_such_module
    except AttributeError as exc:
        assert "no_such_module" in str(exc)
    else:
        raise AssertionError("fpemu.no_such_module")
