"""Blackwell block-scaled MMA (tcgen05.mma kind::mxf8f6f4 and kind::mxf4nvf4): the
``mmasim-blackwell`` preset against MMA-Sim itself, bit for bit.

MMA-Sim (../shared/mmasim, imported, never copied; skipped without it or torch) runs its own
``tcgen05mma_block_scale`` instructions, m128n8, on random element and scale codes from five
distributions (uniform; wide: elements over 2^-30..2^30 of their format and scales over the
whole E8M0/UE4M3 range, so products overflow and zero elements meet huge scales; heavy
cancellation, each dot's second half nearly cancelling its first under the same scales;
subnormal-heavy elements, scales that put the products near fp32's subnormals, subnormal c;
Inf/NaN sprinkled over elements, scales and c), one instruction and two chained ones (the
first result is the second's c). ``fpemu.gemm`` on the same codes must give the same
fp32 bits (any NaN equals any NaN: MMA-Sim's is 0x7FFFFFFF). ``pytest -s`` prints the counts;
``-m slow`` runs four times as many.

MMA-Sim crashes on ``kind::mxf4nvf4`` with c = +-Inf (NOTES.md), so those dots keep a finite
or NaN c here, and a chained dot whose first result is +-Inf is left out of the count (fpemu
must give a non-finite result there); fpemu's rule (IEEE: the Inf) is tested in
tests/accumulator/test_kernels_block_scaled.py.

RTX Blackwell (sm_120a ``mma.block_scale``, m16n8) runs the same arithmetic in MMA-Sim: the
``rtx5090`` preset is held to it the same way, on its eight configurations (NVFP4's UE4M3
scales in blocks of 32 as well), one and two chained instructions in every distribution.
"""

from __future__ import annotations

import numpy as np
import pytest
from mmasim_helpers import DISTRIBUTIONS, draw, mmasim, same_bits

import fpemu
from fpemu import mx

# (kind, block size, scale format, element format of A, of B): every block-scaled
# configuration MMA-Sim runs (its mxf8f6f4 crashes on e2m1 and refuses e3m2/e2m3).
CONFIGS = [
    ("mxf8f6f4", 32, "ue8m0", "e4m3", "e4m3"),
    ("mxf8f6f4", 32, "ue8m0", "e5m2", "e5m2"),
    ("mxf8f6f4", 32, "ue8m0", "e4m3", "e5m2"),
    ("mxf8f6f4", 32, "ue8m0", "e5m2", "e4m3"),
    ("mxf4nvf4", 32, "ue8m0", "e2m1", "e2m1"),
    ("mxf4nvf4", 16, "ue8m0", "e2m1", "e2m1"),
    ("mxf4nvf4", 16, "ue4m3", "e2m1", "e2m1"),
]
IDS = [f"{k}-block{b}-{s}-{fa}x{fb}" for k, b, s, fa, fb in CONFIGS]
# RTX Blackwell's mma.block_scale (sm_120a) runs the same configurations and, in MMA-Sim's list
# (isa/nv_ptx/nv_mma.py line 98), NVFP4's UE4M3 scales in blocks of 32 too.
RTX_CONFIGS = CONFIGS + [("mxf4nvf4", 32, "ue4m3", "e2m1", "e2m1")]
RTX_IDS = [f"{k}-block{b}-{s}-{fa}x{fb}" for k, b, s, fa, fb in RTX_CONFIGS]
BLOCK_FORMAT = {"e4m3": "mxfp8_e4m3", "e5m2": "mxfp8_e5m2", "e2m1": "mxfp4"}
M, N = 128, 8


def scale_codes(dist: str, shape: tuple[int, ...], ue4m3: bool, rng: np.random.Generator) -> np.ndarray:
    """Scale codes of one distribution (E8M0: 2**(code - 127); UE4M3: E4M3 codes 0..126)."""
    if ue4m3:
        lo, hi = {"wide": (0, 127), "subnormal": (0, 16)}.get(dist, (0x30, 0x48))
    else:
        lo, hi = {"wide": (0, 255), "subnormal": (50, 72)}.get(dist, (119, 136))
    s = rng.integers(lo, hi, shape)
    if dist == "special":
        s = np.where(rng.random(shape) < 0.04, 0x7F if ue4m3 else 0xFF, s)
    return s.astype(np.uint8)


def element_codes(dist: str, shape: tuple[int, int], fmt: str, rng: np.random.Generator) -> np.ndarray:
    """Element codes from mmasim_helpers.draw (FP4 has no Inf/NaN: its "special" dots get their
    NaN from scales and c)."""
    values = draw("uniform" if dist == "special" and fmt == "e2m1" else dist, shape, fmt, rng)
    return fpemu.encode(values, fmt, overflow="saturate").astype(np.uint8)


def instruction_operands(config, dist: str, rng: np.random.Generator, m: int = M):
    """Codes and scale codes of one instruction: A (m, k), B (k, N) and their scales."""
    kind, bs, sfmt, fa, fb = config
    k = 64 if kind == "mxf4nvf4" else 32
    A, B = element_codes(dist, (m, k), fa, rng), element_codes(dist, (k, N), fb, rng)
    sa = scale_codes(dist, (m, k // bs), sfmt == "ue4m3", rng)
    sb = scale_codes(dist, (k // bs, N), sfmt == "ue4m3", rng)
    if dist == "cancel":  # the second half of every dot: the first half's values negated, nudged
        h = k // 2
        va = fpemu.decode(A[:, :h], fa)
        vb = fpemu.decode(B[:h], fb) * -(1 + rng.choice([0.0, 2.0**-3, -(2.0**-2)], (h, N)))
        A[:, h:] = fpemu.encode(va, fa, overflow="saturate")
        B[h:] = fpemu.encode(vb, fb, overflow="saturate")
        sa[:, sa.shape[1] // 2:] = sa[:, : sa.shape[1] - sa.shape[1] // 2]
        sb[sb.shape[0] // 2:] = sb[: sb.shape[0] - sb.shape[0] // 2]
    return A, B, sa, sb


def accumulator_input(dist: str, kind: str, rng: np.random.Generator, m: int = M) -> np.ndarray:
    """C (m, N) in fp32; MMA-Sim's mxf4nvf4 crashes on an infinite c, so those become NaN."""
    C = draw(dist, (m, N), "fp32", rng)
    if dist == "subnormal":
        C = draw("subnormal", (m, N), "fp32", rng)
    if kind == "mxf4nvf4":
        C = np.where(np.isinf(C), np.nan, C)
    return C.astype(np.float32)


def to_mmasim(config, A, B, sa, sb):
    """The operands as MMA-Sim's tensors (FP4 packed two per byte, element 2i low)."""
    import torch

    kind, _, sfmt, fa, fb = config
    dtypes = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    stype = torch.float8_e4m3fn if sfmt == "ue4m3" else torch.float8_e8m0fnu
    if kind == "mxf4nvf4":
        ta = torch.from_numpy(mx.pack_codes(A, 4))
        tb = torch.from_numpy(np.ascontiguousarray(mx.pack_codes(np.ascontiguousarray(B.T), 4).T))
    else:
        ta = torch.from_numpy(A).view(dtypes[fa])
        tb = torch.from_numpy(B).view(dtypes[fb])
    return ta, tb, torch.from_numpy(sa).view(stype), torch.from_numpy(sb).view(stype)


def block_arrays(config, As, Bs, sas, sbs):
    """fpemu's BlockArrays of the chained instructions (K concatenated)."""
    _, bs, sfmt, fa, fb = config
    A, B = np.concatenate(As, axis=1), np.concatenate(Bs, axis=0)
    sa, sb = np.concatenate(sas, axis=1), np.concatenate(sbs, axis=0)
    if sfmt == "ue4m3":  # NVFP4 with alpha = 1: 2688 * 2688 * fp32(1/7225344) is exactly 1
        kw = dict(global_amax=2688.0)
        return mx.NVFP4Array(A, sa, "nvfp4", 1, bs, **kw), mx.NVFP4Array(B, sb, "nvfp4", 0, bs, **kw)
    return mx.MXArray(A, sa, BLOCK_FORMAT[fa], 1, bs), mx.MXArray(B, sb, BLOCK_FORMAT[fb], 0, bs)


def mmasim_instruction(config, rtx: bool):
    """MMA-Sim's instruction of a configuration: Blackwell's tcgen05 (m128) or RTX Blackwell's
    mma.block_scale (m16, sm_120a)."""
    kind, bs, sfmt, fa, fb = config
    sim = mmasim()
    import mmasim.simulator.nv_ptx as nv_ptx

    del sim
    k = 64 if kind == "mxf4nvf4" else 32
    if rtx:
        return nv_ptx.mma_block_scale("RTX Blackwell", f"m16n{N}k{k}.block{bs}.f32.{fa}.{fb}.f32.{sfmt}")
    return nv_ptx.tcgen05mma_block_scale("Blackwell", f"m{M}n{N}k{k}.block{bs}.f32.{fa}.{fb}.{sfmt}")


def compare(config, dist: str, chain: int, seed: int, rtx: bool = False) -> tuple[int, int]:
    """(identical dots, dots) of one distribution and chain length: MMA-Sim's Blackwell
    against ``mmasim-blackwell``, or (``rtx``) its RTX Blackwell against ``rtx5090``."""
    kind, bs, sfmt, fa, fb = config
    inst = mmasim_instruction(config, rtx)
    m = inst.m
    rng = np.random.default_rng(seed)
    parts = [instruction_operands(config, dist, rng, m) for _ in range(chain)]
    C = accumulator_input(dist, kind, rng, m)
    import torch

    D = torch.from_numpy(C)
    lost = np.zeros((m, N), dtype=bool)  # dots whose chain MMA-Sim cannot continue
    for i, (A, B, sa, sb) in enumerate(parts):
        if kind == "mxf4nvf4" and i > 0:  # an Inf first result would crash MMA-Sim's second step
            lost |= torch.isinf(D).numpy()
            D = torch.where(torch.isinf(D), torch.nan, D)
        D = inst(*to_mmasim(config, A, B, sa, sb)[:2], D, *to_mmasim(config, A, B, sa, sb)[2:])
    qa, qb = block_arrays(config, *zip(*parts))
    got = fpemu.gemm(qa, qb, C, accumulator="rtx5090" if rtx else "mmasim-blackwell", instruction=kind)
    # Where the chain was cut, fpemu's own rule holds: an Inf accumulator stays Inf (or NaN).
    assert not np.isfinite(got[lost]).any()
    return int(same_bits(got[~lost], D.numpy()[~lost]).sum()), int((~lost).sum())


def run(config, repeat: int, rtx: bool = False) -> dict[str, tuple[int, int]]:
    counts = {}
    for i, dist in enumerate(DISTRIBUTIONS):
        same = total = 0
        for r in range(repeat):
            for chain in (1, 2) if (dist == "uniform" or repeat > 1 or rtx) else (1,):
                s, n = compare(config, dist, chain, seed=1000 * r + 10 * i + chain, rtx=rtx)
                same, total = same + s, total + n
        counts[dist] = (same, total)
    preset = "rtx5090 (RTX Blackwell mma.block_scale)" if rtx else "mmasim-blackwell"
    print(f"\n{config} vs {preset}: " + ", ".join(f"{d} {s}/{n}" for d, (s, n) in counts.items()))
    return counts


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_mmasim_blackwell_preset_equals_mmasim(config):
    counts = run(config, repeat=1)
    assert all(s == n for s, n in counts.values()), counts


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_mmasim_blackwell_preset_equals_mmasim_sweep(config):
    counts = run(config, repeat=4)
    assert all(s == n for s, n in counts.values()), counts


@pytest.mark.parametrize("config", RTX_CONFIGS, ids=RTX_IDS)
def test_rtx_blackwell_preset_equals_mmasim(config):
    counts = run(config, repeat=1, rtx=True)
    assert all(s == n for s, n in counts.values()), counts


@pytest.mark.slow
@pytest.mark.parametrize("config", RTX_CONFIGS, ids=RTX_IDS)
def test_rtx_blackwell_preset_equals_mmasim_sweep(config):
    counts = run(config, repeat=4, rtx=True)
    assert all(s == n for s, n in counts.values()), counts
