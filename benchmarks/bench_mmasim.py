"""fpemu.dot against MMA-Sim on the same AMD dot products: microseconds per dot and the ratio,
printed (the claim in docs/accumulator.md; never asserted in a test).

    python benchmarks/bench_mmasim.py        # needs torch and ../shared/mmasim
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    try:
        import mmasim_helpers as T
    except ImportError as exc:
        print(f"skipped: {exc}")
        return 0
    if not T.MMASIM.is_dir():
        print(f"skipped: {T.MMASIM} not available")
        return 0

    class _Patch:  # what pytest's monkeypatch does for patched_amd
        def setattr(self, obj, name, value):
            setattr(obj, name, value)

    import fpemu

    amd = T.patched_amd(_Patch())
    for arch, qualifier, preset, fmts in [("CDNA3", "f32_16x16x16_f16", "mi300x", ("fp16", "fp16")),
                                          ("CDNA2", "f32_16x16x16bf16_1k", "mi250", ("bf16", "bf16"))]:
        _, n, t_sim, _ = T.compare_amd(amd, arch, qualifier, preset, fmts, "uniform", 1, seed=7)
        inst = amd.mfma(arch, qualifier)
        A, B, C = T.operands("uniform", 640, inst.n, inst.k, *fmts, np.random.default_rng(8))
        a, b, c = T.as_dots([A], [B], C)
        best = min(_timed(lambda: fpemu.dot(a, b, c, inputs=fmts, accumulator=preset)) for _ in range(3))
        per_fpemu, per_sim = best / a.shape[0], t_sim / n
        print(f"{arch} {qualifier:22s} MMA-Sim {1e6 * per_sim:8.0f} us/dot   fpemu {1e6 * per_fpemu:6.2f} us/dot   "
              f"{per_sim / per_fpemu:6.0f}x")
    return 0


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    raise SystemExit(main())
