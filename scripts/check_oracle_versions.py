"""Run the tests that compare fpemu with an optional oracle library under each release of it a
user can install, each in its own temporary virtual environment, and fail if any is red.

    python scripts/check_oracle_versions.py            # every release below
    python scripts/check_oracle_versions.py ml_dtypes==0.6.0
    python scripts/check_oracle_versions.py --list     # the releases and the test files

Each venv sees the packages of the interpreter that runs this script, a venv's included
(numpy, pytest, hypothesis, torch, ...: a .pth file adds its site directories after the
venv's own), and gets one release of the oracle on top, so what changes between runs is that
library alone. The
tests are the files under tests/ that use ml_dtypes or gfloat; they read the installed release
themselves (fpemu.like("ml_dtypes") follows it), so the same files must pass under each.
CI runs this after the README's test command (.ci/run).
"""

from __future__ import annotations

import argparse
import re
import site
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: What a user can get from ``pip install`` under pyproject's test extra (ml_dtypes>=0.5.1,
#: gfloat>=0.5): the first and last release of each series, and the newest gfloat (no pin).
RELEASES = ("ml_dtypes==0.5.1", "ml_dtypes==0.5.4", "ml_dtypes==0.6.0", "ml_dtypes==0.7.0",
            "gfloat==0.5.1", "gfloat")  # fmt: skip

_USES_ORACLE = re.compile(r"\b(ml_dtypes|gfloat)\b")


def oracle_test_files() -> list[str]:
    """The test files that use ml_dtypes or gfloat, in tests/ and its package folders
    (tests/codec/, tests/mx/, ...; helpers without tests left out)."""
    files = sorted((ROOT / "tests").rglob("test_*.py"))
    return [str(f.relative_to(ROOT)) for f in files if _USES_ORACLE.search(f.read_text())]


def _inherit_site_packages(python: str) -> None:
    """Let the venv of ``python`` see this interpreter's site directories after its own (their
    .pth files too, so editable installs work), as --system-site-packages would for a base
    interpreter; works when this interpreter is itself a venv."""
    own = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    dirs = [d for d in site.getsitepackages() + [site.getusersitepackages()] if Path(d).is_dir()]
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs)
    (Path(own) / "zz_fpemu_parent_env.pth").write_text(lines)


def run_under(requirement: str, files: list[str], pytest_args: list[str]) -> tuple[bool, str, float]:
    """Install ``requirement`` into a fresh venv over this Python's packages and run the files;
    returns whether they passed, pytest's last line and the seconds taken."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fpemu-oracle-") as tmp:
        venv.create(tmp, with_pip=True)
        python = str(Path(tmp) / "bin" / "python")
        _inherit_site_packages(python)
        upgrade = [] if "==" in requirement else ["--upgrade"]
        pip = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *upgrade,
                              requirement], capture_output=True, text=True)  # fmt: skip
        if pip.returncode:
            return False, f"pip install {requirement} failed: {pip.stderr.strip().splitlines()[-1:]}", 0.0
        show = subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({requirement.split('=')[0]!r}))"],
                              capture_output=True, text=True)  # fmt: skip
        tests = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args, *files],
                               cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    lines = [ln for ln in tests.stdout.splitlines() if ln.strip()]
    last = lines[-1] if lines else tests.stderr.strip()[-200:]
    ok = tests.returncode == 0
    if not ok:
        print(tests.stdout[-6000:], file=sys.stderr)
    return ok, f"{show.stdout.strip() or '?'}: {last}", time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*", default=list(RELEASES), help="pip requirements, one venv each")
    parser.add_argument("--list", action="store_true", help="print the releases and test files, run nothing")
    parser.add_argument("--pytest-args", default="", help="more pytest arguments, e.g. '-x'")
    args = parser.parse_args(argv)
    files = oracle_test_files()
    if args.list:
        print("releases:", ", ".join(args.releases))
        print("tests:", " ".join(files))
        return 0
    failed = []
    for requirement in args.releases:
        ok, what, seconds = run_under(requirement, files, args.pytest_args.split())
        print(f"{'ok  ' if ok else 'FAIL'} {requirement:<18} {what} ({seconds:.0f} s)", flush=True)
        if not ok:
            failed.append(requirement)
    if failed:
        print(f"red under: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"green under all {len(args.releases)} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
