"""Shared by tests/testing/test_tolerance*.py, tests/accumulator/test_units_hwdata.py and
scripts/gen_tolerance_doc.py / gen_evidence_doc.py: the presets with their input formats,
random operands, and a hardware dump read as dot products (with the README's quirks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import fpemu

HWDATA = Path(__file__).resolve().parents[1].parent / "shared" / "hwdata"

# (preset, input formats): every architecture's instruction families, and the IEEE loops.
PRESETS = [
    ("v100", "fp16"), ("t4", "fp16"), ("a100", "fp16"), ("a100", "bf16"), ("a100", "tf32"),
    ("ada", "fp16"), ("ada", "tf32"), ("ada", "e4m3"), ("ada", ("e4m3", "e5m2")),
    ("h100", "fp16"), ("h100", "bf16"), ("h100", "tf32"), ("h100", "e4m3"), ("h100", "e5m2"),
    ("b200", "fp16"), ("b200", "bf16"), ("b200", "tf32"), ("b200", "e4m3"), ("b200", ("e5m2", "e2m1")),
    ("b200", ("e2m3", "e3m2")),
    ("mi100", "fp32"), ("mi100", "fp16"), ("mi100", "bf16"),
    ("mi250", "fp32"), ("mi250", "fp16"), ("mi250", "bf16"), ("mi250/bf16", "bf16"),
    ("mi300x", "fp32"), ("mi300x", "tf32"), ("mi300x", "fp16"), ("mi300x", "bf16"),
    ("mi300x/f16_k4", "fp16"), ("mi300x/bf16_k4", "bf16"), ("mi300x", "e4m3fnuz"),
    ("mi300x", ("e4m3fnuz", "e5m2fnuz")),
    ("exact", "fp16"), ("fp32", "bf16"), ("fp16", "fp16"), ("bf16", "bf16"), ("pairwise_fp32", "fp16"),
]  # fmt: skip


def label(preset: str, inputs) -> str:
    return f"{preset}-{inputs if isinstance(inputs, str) else 'x'.join(inputs)}"


def pair(inputs) -> tuple[str, str]:
    return (inputs, inputs) if isinstance(inputs, str) else tuple(inputs)


def random_gemm(dist: str, m: int, k: int, n: int, inputs, rng: np.random.Generator):
    """A (m, k), B (k, n) in the input formats and C (m, n) in fp32: "uniform" in [-1, 1],
    "wide" with exponents over +-12 binades (within the format), "cancel" where the second half
    of each dot product nearly cancels the first."""
    fa, fb = pair(inputs)

    def draw(shape, fmt):
        f = fpemu.get_format(fmt)
        x = rng.uniform(-1, 1, shape)
        if dist == "wide":
            span = max(1, min(12, (f.emax - f.emin) // 2 - 1))
            x = x * 2.0 ** rng.integers(-span, span + 1, shape)
        x = np.where(rng.random(shape) < 0.05, 0.0, x)
        return np.asarray(fpemu.quantize(x, fmt, overflow="saturate"), dtype=np.float64)

    A, B = draw((m, k), fa), draw((k, n), fb)
    C = np.asarray(fpemu.quantize(rng.uniform(-1, 1, (m, n)), "fp32"), dtype=np.float64)
    if dist == "cancel" and k >= 2:
        h = k // 2
        A[:, h : 2 * h] = fpemu.quantize(A[:, :h], fa, overflow="saturate")
        B[h : 2 * h] = fpemu.quantize(-B[:h] * (1 + rng.choice([0.0, 2.0**-6, -(2.0**-9)], (h, n))), fb,
                                      overflow="saturate")  # fmt: skip
        C = np.asarray(fpemu.quantize(C * 2.0**-12, "fp32"), dtype=np.float64)
    return A, B, C


#: The dumps whose fp32-output runs had a zero accumulator: ignore their c column (hwdata/README.md).
ZERO_C_FP32 = frozenset({"h100_e4m3", "h100_e5m2", "h200_e4m3", "h200_e5m2"})


def dump_dots(path: Path, column: str):
    """A dump's rows as dot operands (a, b (n, K), c (n,)) and the GPU's results, with the
    README's quirk (the h100 and h200 FP8 fp32 runs used wgmma with a zero accumulator)."""
    data = np.load(path)
    gpu, fmt = path.stem.split("_", 1)
    a, b = data["a"].view(np.float32).astype(np.float64), data["b"].view(np.float32).astype(np.float64)
    c = data["c"].view(np.float32).astype(np.float64)
    if path.stem in ZERO_C_FP32 and column == "d_fp32":
        c = np.zeros_like(c)
    return gpu, fmt, a, b, c, data[column].view(np.float32)


def dump_columns() -> list[tuple[Path, str]]:
    """Every (file, result column) of ../shared/hwdata (empty when it is absent)."""
    if not HWDATA.is_dir():
        return []
    out = []
    for path in sorted(HWDATA.glob("*.npz")):
        with np.load(path) as data:
            out += [(path, col) for col in ("d_fp32", "d_fp16") if col in data.files]
    return out
