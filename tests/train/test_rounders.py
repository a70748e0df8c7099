"""Tests of fpemu.train.rounders: the low-format rounders against the codec."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.train.rounders import rounder

F32 = np.float32


# ---- the low-format rounders against the codec and independent oracles ----------------------
def _random_f32(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    near = (u[: n // 2] & np.uint32(0x87FFFFFF)) | np.uint32(0x30000000)  # around the FP16 range
    x = np.concatenate([u[n // 2 :], near]).view(F32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 2**-25,
                        3 * 2**-26, 2**-24, 2**-14, 2**-149, 3.4e38], F32)
    return np.concatenate([x, special, -special])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("name", ["fp16", "bf16"])
def test_rounders_match_codec(name):
    x = _random_f32(200_000, 1)
    assert _same(rounder(fpemu.get_format(name))(x), fpemu.quantize(x, name).astype(F32))
