"""fpemu's AMD matrix-core presets against MMA-Sim itself, bit for bit.

MMA-Sim (Microsoft, MIT licence; arXiv 2511.10909) is imported from ../shared/mmasim, never
copied; the tests skip when that folder or torch is absent. Every configuration runs real
MFMA instructions of MMA-Sim on random operands from five distributions (uniform, exponents
spread over 2^-30..2^30, heavy cancellation, subnormal-heavy, Inf/NaN sprinkled), one
instruction and two chained instructions (the result of the first is the c of the second),
and ``fpemu.dot`` must give the same fp32 bits (any NaN equals any NaN: MMA-Sim's NaN
payloads are torch's). ``pytest -s`` prints the identical counts; ``-m slow`` runs 5x more.

MMA-Sim as published asserts fp32 operands in ``pairwise_dot`` and so crashes on every
CDNA1/CDNA2 fp16/bf16 instruction; converting the operands to fp32 first is exact and is done
here by wrapping that one function (NOTES.md).
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

_TYPES = {"f32": "fp32", "xf32": "tf32", "f16": "fp16", "bf16": "bf16", "fp8": "e4m3fnuz", "bf8": "e5m2fnuz"}
_GPU = {"cdna1": "mi100", "cdna2": "mi250", "cdna3": "mi300x"}


def every_amd_instruction() -> list[tuple[str, str, str, tuple[str, str]]]:
    """Every fp32-output MFMA instruction in fpemu.accumulator.units' table, as (MMA-Sim architecture,
    qualifier, GPU, operand formats); the f64 ones are out of fpemu's scope."""
    from fpemu.accumulator.units import ARCHITECTURES

    out = []
    for arch, gpu in _GPU.items():
        for fam in ARCHITECTURES[arch].values():
            for name in fam["instructions"]:
                parts = name.removesuffix("_1k").split("_")
                if parts[-1] in ("fp8", "bf8"):
                    fmts = (_TYPES[parts[-2]], _TYPES[parts[-1]])
                else:
                    typ = next(t for t in sorted(_TYPES, key=len, reverse=True) if parts[-1].endswith(t))
                    fmts = (_TYPES[typ],) * 2
                out.append((arch.upper(), name, gpu, fmts))
    return out

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


@pytest.fixture
def amd(monkeypatch):
    """MMA-Sim's AMD simulator, patched as :func:`patched_amd` says."""
    return patched_amd(monkeypatch)


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


def run_amd(amd, config, repeat: int) -> dict[str, tuple[int, int]]:
    arch, qualifier, preset, fmts = config
    counts = {}
    for i, dist in enumerate(DISTRIBUTIONS):
        same = total = 0
        for r in range(repeat):
            for chain in (1, 2):
                s, n, _, _ = compare_amd(amd, arch, qualifier, preset, fmts, dist, chain, seed=1000 * r + 10 * i + chain)
                same, total = same + s, total + n
        counts[dist] = (same, total)
    summary = ", ".join(f"{d} {s}/{n}" for d, (s, n) in counts.items())
    print(f"\n{arch} {qualifier} vs fpemu {preset}: {summary}")
    return counts


@pytest.mark.parametrize("config", AMD, ids=[c[1] for c in AMD])
def test_amd_presets_equal_mmasim(amd, config):
    counts = run_amd(amd, config, repeat=1)
    assert all(s == n for s, n in counts.values()), counts


@pytest.mark.slow
@pytest.mark.parametrize("config", AMD, ids=[c[1] for c in AMD])
def test_amd_presets_equal_mmasim_sweep(amd, config):
    counts = run_amd(amd, config, repeat=5)
    assert all(s == n for s, n in counts.values()), counts


def test_every_amd_instruction_is_listed():
    """The table lists every fp32-output MFMA instruction MMA-Sim knows, each once, in the
    family MMA-Sim gives the same model (checked against MMA-Sim by the sweep below)."""
    sim = mmasim()
    from mmasim.isa.amd import arch_mfma_qualifiers

    ours = {(arch, name) for arch, name, _, _ in every_amd_instruction()}
    theirs = {(arch, q) for arch, qs in arch_mfma_qualifiers.items() for q in qs if not q.startswith("f64")}
    assert sim is not None and ours == theirs


@pytest.mark.slow
@pytest.mark.parametrize("config", every_amd_instruction(), ids=lambda c: f"{c[0]}-{c[1]}" if isinstance(c, tuple) else "")
def test_every_amd_instruction_equals_mmasim(amd, config):
    counts = run_amd(amd, config, repeat=1)
    assert all(s == n for s, n in counts.values()), counts
