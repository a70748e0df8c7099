"""MMA-Sim as an oracle for the matrix-unit tests: loading it from ../shared/mmasim (or skipping),
its AMD simulator patched to run CDNA1/CDNA2 fp16/bf16, operands from five distributions,
MMA-Sim's torch tensors, and one AMD comparison (tests/accumulator/test_units_mmasim.py, the
tolerance oracles, scripts/gen_evidence_doc.py and benchmarks/bench_mmasim.py share them).

MMA-Sim (Microsoft, MIT licence; arXiv 2511.10909) is imported from ../shared/mmasim, never
copied; the tests skip when that folder or torch is absent. MMA-Sim as published asserts fp32
operands in ``pairwise_dot`` and so crashes on every CDNA1/CDNA2 fp16/bf16 instruction;
converting the operands to fp32 first is exact and is done here by wrapping that one function
(NOTES.md).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

import fpemu
from fpemu.accumulator import dot, get_accumulator
from fpemu.formats import get_format

MMASIM = Path(__file__).resolve().parents[1].parent / "shared" / "mmasim"
DISTRIBUTIONS = ("uniform", "wide", "cancel", "subnormal", "special")

# (MMA-Sim architecture, instruction qualifier, fpemu preset, input formats of A and B): one
# instruction of each AMD family in the default run. The preset is looked up with the
# instruction's name (instruction=), so the family and its K come from fpemu.accumulator.units' table.
AMD = [
    ("CDNA1", "f32_16x16x4f32", "mi100", ("fp32", "fp32")),
    ("CDNA1", "f32_16x16x16f16", "mi100", ("fp16", "fp16")),
    ("CDNA1", "f32_16x16x8bf16", "mi100", ("bf16", "bf16")),
    ("CDNA2", "f32_16x16x4f32", "mi250", ("fp32", "fp32")),
    ("CDNA2", "f32_16x16x16f16", "mi250x", ("fp16", "fp16")),
    ("CDNA2", "f32_16x16x8bf16", "mi210", ("bf16", "bf16")),
    ("CDNA2", "f32_16x16x16bf16_1k", "mi250", ("bf16", "bf16")),
    ("CDNA3", "f32_16x16x4_f32", "mi300x", ("fp32", "fp32")),
    ("CDNA3", "f32_16x16x8_xf32", "mi300x", ("tf32", "tf32")),
    ("CDNA3", "f32_16x16x16_f16", "mi300x", ("fp16", "fp16")),
    ("CDNA3", "f32_16x16x4_4b_f16", "mi300x", ("fp16", "fp16")),
    ("CDNA3", "f32_16x16x16_bf16", "mi325x", ("bf16", "bf16")),
    ("CDNA3", "f32_16x16x4_4b_bf16", "mi300", ("bf16", "bf16")),
    ("CDNA3", "f32_16x16x32_fp8_fp8", "mi300x", ("e4m3fnuz", "e4m3fnuz")),
    ("CDNA3", "f32_16x16x32_fp8_bf8", "mi300x", ("e4m3fnuz", "e5m2fnuz")),
    ("CDNA3", "f32_16x16x32_bf8_fp8", "mi300x", ("e5m2fnuz", "e4m3fnuz")),
    ("CDNA3", "f32_16x16x32_bf8_bf8", "mi300x", ("e5m2fnuz", "e5m2fnuz")),
]

def mmasim():
    """MMA-Sim's package (from ../shared/mmasim), or skip."""
    if not MMASIM.is_dir():
        pytest.skip(f"{MMASIM} not available")
    pytest.importorskip("torch")
    if str(MMASIM) not in sys.path:
        sys.path.insert(0, str(MMASIM))
    import mmasim.simulator as sim

    return sim


def patched_amd(monkeypatch):
    """MMA-Sim's AMD simulator, its pairwise_dot fed fp32 operands (exact) so that the
    CDNA1/CDNA2 fp16 and bf16 instructions run."""
    sim = mmasim()
    import mmasim.simulator.amd as amd_module

    original = amd_module.pairwise_dot
    monkeypatch.setattr(amd_module, "pairwise_dot", lambda a, b, flush=False: original(a.float(), b.float(), flush))
    return sim.amd


# ---- operands --------------------------------------------------------------------------------
def draw(dist: str, shape: tuple[int, ...], fmt: str, rng: np.random.Generator) -> np.ndarray:
    """Values of the format (float64), from one of the five distributions."""
    f = get_format(fmt)
    sign = rng.choice([-1.0, 1.0], shape)
    if dist == "wide":
        lo, hi = max(-30, f.emin - f.mantissa_bits), min(30, f.emax)
        x = sign * rng.uniform(1, 2, shape) * 2.0 ** rng.integers(lo, hi + 1, shape)
    elif dist == "subnormal":  # around the smallest normal, mostly below it
        x = sign * 2.0 ** rng.uniform(f.emin - f.mantissa_bits - 1, f.emin + 1, shape)
    else:
        x = rng.uniform(-1, 1, shape) * (4.0 if f.emax >= 2 else 1.0)
    if dist == "special":
        x = np.where(rng.random(shape) < 0.04, rng.choice([np.inf, -np.inf, np.nan], shape), x)
    x = np.where(rng.random(shape) < 0.03, sign * 0.0, x)  # signed zeros everywhere
    return np.asarray(fpemu.quantize(x, fmt), dtype=np.float64)


def operands(dist: str, m: int, n: int, k: int, fa: str, fb: str, rng: np.random.Generator):
    """A (m, k), B (k, n) in their formats and C (m, n) in fp32; "cancel" makes the second
    half of every dot product nearly cancel the first."""
    A, B = draw(dist, (m, k), fa, rng), draw(dist, (k, n), fb, rng)
    C = draw(dist, (m, n), "fp32", rng)
    if dist == "cancel" and k >= 2:
        h = k // 2
        A[:, h : 2 * h] = fpemu.quantize(A[:, :h], fa)
        nudge = 1 + rng.choice([0.0, 2.0**-6, -(2.0**-9)], (h, n))
        B[h : 2 * h] = fpemu.quantize(-B[:h] * nudge, fb)
        C = np.asarray(fpemu.quantize(C * 2.0**-12, "fp32"), dtype=np.float64)
    elif dist == "subnormal":
        C = np.asarray(fpemu.quantize(draw("subnormal", (m, n), "fp32", rng), "fp32"), dtype=np.float64)
    return A, B, C


TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16",
                "e4m3fnuz": "float8_e4m3fnuz", "e5m2fnuz": "float8_e5m2fnuz",
                "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}  # fmt: skip


def to_torch(x: np.ndarray, fmt: str):
    """x (values of fmt) as a torch tensor of MMA-Sim's dtype for fmt, checked to be exact."""
    import torch

    t = torch.from_numpy(x.astype(np.float32)).to(getattr(torch, TORCH_DTYPES[fmt]))
    assert same_bits(t.float().numpy(), x.astype(np.float32)).all(), f"{fmt} values changed in torch"
    return t


def same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: identical fp32 bit patterns, or both NaN."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    return (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))


def as_dots(As: list[np.ndarray], Bs: list[np.ndarray], C: np.ndarray):
    """The m*n dot products of chained instructions A1 @ B1 (+ A2 @ B2 ...) + C as dot()
    operands: row i*n + j holds A's row i and B's column j over all instructions."""
    A, B = np.concatenate(As, axis=1), np.concatenate(Bs, axis=0)
    m, n = C.shape
    return np.repeat(A, n, axis=0), np.tile(B.T, (m, 1)), C.reshape(-1)


def compare_amd(amd, arch: str, qualifier: str, preset: str, fmts, dist: str, chain: int, seed: int):
    """(identical dots, dots, MMA-Sim seconds, fpemu seconds) for one distribution: the
    instruction applied ``chain`` times, each result the next c."""
    inst = amd.mfma(arch, qualifier)
    rng = np.random.default_rng(seed)
    As, Bs = [], []
    C0 = None
    for _ in range(chain):
        A, B, C = operands(dist, inst.m, inst.n, inst.k, *fmts, rng)
        As.append(A)
        Bs.append(B)
        C0 = C if C0 is None else C0
    t = time.perf_counter()
    D = to_torch(C0, "fp32")
    for A, B in zip(As, Bs):
        D = inst(to_torch(A, fmts[0]), to_torch(B, fmts[1]), D)
    t_sim = time.perf_counter() - t
    # The instruction by name: its family's model, reading (flushing) c once per k products.
    acc = get_accumulator(preset, fmts, instruction=qualifier)
    assert acc.instruction_k == inst.k, (acc.instruction_k, inst.k)
    a, b, c = as_dots(As, Bs, C0)
    t = time.perf_counter()
    got = dot(a, b, c, inputs=fmts, accumulator=acc)
    t_fpemu = time.perf_counter() - t
    return int(same_bits(got, D.numpy().reshape(-1)).sum()), got.size, t_sim, t_fpemu


#: Blackwell kind::f8f6f4's FP8 operand pairs of MMA-Sim's tcgen05 instructions.
PAIRS = [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2"), ("e5m2", "e4m3")]


def nv_ptx():
    """MMA-Sim's NVIDIA simulator (or skip)."""
    mmasim()
    import mmasim.simulator.nv_ptx as module

    return module
