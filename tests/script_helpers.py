"""Loading one of the repository's scripts (benchmarks/, scripts/) as a module in a test,
since they are run as files and are no package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(path: str, name: str | None = None) -> ModuleType:
    """The module of the script at ``path`` (relative to the repository root), registered in
    sys.modules under ``name`` (default: its file stem) unless a module of that name is there,
    so that the scripts it imports by name find it."""
    file = ROOT / path
    name = name or file.stem
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module
