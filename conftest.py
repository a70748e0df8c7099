"""Collection rules for the whole repository (tests/conftest.py holds the tests' fixtures).

fpemu.torch's modules import torch (an optional extra) at the top: where torch is not installed
their doctests are not collected, as the tests of tests/test_torch_*.py skip. The package's
``__init__`` imports no torch and is collected everywhere.
"""

import importlib.util


def _have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses the name; a module without a spec
        return False


collect_ignore_glob = [] if _have("torch") else ["fpemu/torch/[!_]*.py"]
