"""fpemu's AMD matrix-core presets (fpemu/accumulator/units.py) against MMA-Sim itself, bit
for bit.

Every configuration runs real MFMA instructions of MMA-Sim on random operands from five
distributions (uniform, exponents spread over 2^-30..2^30, heavy cancellation,
subnormal-heavy, Inf/NaN sprinkled), one instruction and two chained instructions (the result
of the first is the c of the second), and ``fpemu.dot`` must give the same fp32 bits (any NaN
equals any NaN: MMA-Sim's NaN payloads are torch's). ``pytest -s`` prints the identical
counts; ``-m slow`` runs 5x more. MMA-Sim is loaded and patched by tests/mmasim_helpers.py.
"""

from __future__ import annotations

import pytest
from mmasim_helpers import AMD, DISTRIBUTIONS, compare_amd, mmasim, patched_amd


@pytest.fixture
def amd(monkeypatch):
    """MMA-Sim's AMD simulator, patched as :func:`patched_amd` says."""
    return patched_amd(monkeypatch)


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
