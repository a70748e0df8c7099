"""Fixtures shared by several test files.

``default_runs``: the default task's four 300-step runs (seed 0: fp32, fp16 without loss
scaling, fp16 with dynamic scaling, bf16), trained once per session and shared by
tests/train/test_claims.py (the claims of docs/training.md) and tests/train/test_torch.py
(the comparison with real PyTorch mixed precision). Each run is 3-7 s of CPU; the
fixture is built only when a test asks for it. Tests must treat the runs as read-only.
"""

from __future__ import annotations

import pytest

# The runs, in this order, in both files: (precision, loss scaling).
DEFAULT_RUNS = (("fp32", "none"), ("fp16", "none"), ("fp16", "dynamic"), ("bf16", "none"))
DEFAULT_STEPS = 300
DEFAULT_SEED = 0


@pytest.fixture(scope="session")
def default_task():
    """The default task of seed 0 (the data, weights and batches every default run uses)."""
    from fpemu import train as T

    return T.make_task(DEFAULT_SEED)


@pytest.fixture(scope="session")
def default_runs(default_task):
    """fpemu's histories of :data:`DEFAULT_RUNS` on :func:`default_task`, in that order."""
    from fpemu import train as T

    return [T.run(p, ls, DEFAULT_STEPS, DEFAULT_SEED, task=default_task) for p, ls in DEFAULT_RUNS]


@pytest.fixture(autouse=True)
def _no_progress_lines(monkeypatch):
    """No timed progress line on stderr in a test (a command run in a pipe prints one every
    few seconds, so a slow machine would change what a test reads); the tests of those lines
    set ``fpemu.progress.LINES_EVERY_S`` themselves."""
    import fpemu.progress

    monkeypatch.setattr(fpemu.progress, "LINES_EVERY_S", float("inf"))


@pytest.fixture
def plt():
    """matplotlib.pyplot on the Agg backend (skipped without matplotlib); figures closed after."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def pytest_collection_modifyitems(config, items):
    """The tests of an xdist group (the training files that share :func:`default_runs`) go
    first: under ``-n auto --dist loadgroup`` one worker trains the shared runs from the start
    while the others take the rest, instead of that minute-long group starting last and
    running alone at the end. (A stable sort: the order within each part is kept.)"""
    items.sort(key=lambda item: 0 if item.get_closest_marker("xdist_group") else 1)
