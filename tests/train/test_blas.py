"""Tests of fpemu.train.blas: every OpenBLAS pinned to one thread, and runs that do not
depend on the BLAS thread setting."""

from __future__ import annotations

import pytest

from fpemu import train as T
from fpemu.train.blas import _openblas_thread_controls


def test_single_threaded_blas_pins_every_openblas_and_restores():
    controls = _openblas_thread_controls()
    if not controls:
        pytest.skip("no OpenBLAS loaded in this process: nothing to pin")
    before = [int(get()) for get, _ in controls]
    with T.single_threaded_blas():
        assert [int(get()) for get, _ in controls] == [1] * len(controls)
    assert [int(get()) for get, _ in controls] == before


_RUN_IN_SUBPROCESS = """
import sys, numpy as np
if sys.argv[1] == "torch":
    import torch  # noqa: F401  (its libraries are loaded next to numpy's OpenBLAS)
from fpemu import train as T
task = T.make_task(3, n_train=2048, batch_size=256, hidden=32, depth=2)
h = T.run("fp32", steps=8, seed=3, task=task)
print(" ".join(str(int(v)) for v in np.asarray(h.loss, np.float32).view(np.uint32)))
"""


def test_runs_do_not_depend_on_the_blas_thread_setting():
    """run() pins BLAS itself: the same bits whatever OPENBLAS_NUM_THREADS says, with torch
    imported or not."""
    import os
    import subprocess
    import sys

    variants = [("1", "plain"), ("2", "plain"), (None, "plain")]
    try:
        import torch  # noqa: F401

        variants.append(("2", "torch"))
    except ImportError:
        pass
    outputs = set()
    for threads, extra in variants:
        env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
        if threads is not None:
            env["OPENBLAS_NUM_THREADS"] = threads
        done = subprocess.run([sys.executable, "-c", _RUN_IN_SUBPROCESS, extra], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.add(done.stdout.strip())
    assert len(outputs) == 1 and len(outputs.pop().split()) == 8
