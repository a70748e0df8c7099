"""The end-to-end example of docs/golden.md ("The workflow end to end"): a NumPy-written kernel
tested with fpemu.testing against a golden .bin file and against fpemu live; the page shows this
file's code below the docstring (tests/test_golden_docs.py holds the two equal), and the same
kernel in C++ reads the same file.
"""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.testing import assert_bits_equal
from fpemu.vectors import cast_vectors, read_vectors, write_vectors


def my_bf16_kernel(x: np.ndarray) -> np.ndarray:
    """The kernel under test: float32 -> bf16 codes, round to nearest even, NaNs quieted with
    their payload kept (the classic bit trick, as in the C++ test below)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (u >> 16) | 0x40, (u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    # In a kernel repository this file is generated once and committed:
    #   fpemu vectors bf16 --kind exhaustive --nan quiet_payload --out tests/golden/bf16_rne.bin
    path = tmp_path_factory.mktemp("golden") / "bf16_rne.bin"
    write_vectors(cast_vectors("bf16", "exhaustive", nan="quiet_payload"), path)
    return read_vectors(path)


def test_kernel_gives_every_outcome_of_the_cast(golden):
    x = golden["input_bits"].view(np.float32)  # 392,448 inputs: every class RNE can tell apart
    assert_bits_equal(my_bf16_kernel(x), golden["code"], "bf16")


@pytest.mark.parametrize("seed", range(3))
def test_kernel_matches_fpemu_on_random_bits(seed):
    x = np.random.default_rng(seed).integers(0, 2**32, size=100_000, dtype=np.uint32).view(np.float32)
    assert_bits_equal(my_bf16_kernel(x), fpemu.encode(x, "bf16", nan="quiet_payload"), "bf16")


def test_the_golden_file_catches_ties_rounded_away(golden):
    def ties_away(x):  # a plausible bug: + 0x8000 rounds every tie away from zero
        u = x.view(np.uint32)
        return np.where((u & 0x7FFFFFFF) > 0x7F800000, (u >> 16) | 0x40, (u + 0x8000) >> 16).astype(np.uint16)

    with pytest.raises(AssertionError, match=r"^32640 of 392448 elements differ in bf16 \(largest distance 1 ulps\)"):
        assert_bits_equal(ties_away(golden["input_bits"].view(np.float32)), golden["code"], "bf16")
