"""Bit-exact replay of real tensor-core dumps (../shared/hwdata) with the named presets.

Each file holds 5000 single-instruction experiments measured on the GPU. The presets come from
the architectures' published parameters (SPEC section 5), so these dumps are the test, not the
source. The open targets named in hwdata/README.md (B200 FP8; fp16 output of H100 FP8) are
reported but only required not to crash. The fp16 output of H100/B200 FP8, open until issue 18,
is required: its preset is the model found on these dumps (docs/fp8-fp16-output.md).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from tolerance_helpers import dump_columns, dump_dots

from fpemu.accumulator import BlockFMA, dot, gemm, get_accumulator

HWDATA = Path(__file__).resolve().parents[2].parent / "shared" / "hwdata"

# Every (file, result column) in ../shared/hwdata must replay all 5000 rows, but for the open
# targets below, which must run; a dump added to hwdata is required from the day it lands.
OPEN = [
    ("b200", "e5m2", "d_fp32"),  # 4999: see docs/accumulator.md
]
REQUIRED = [(p.stem.split("_", 1)[0], p.stem.split("_", 1)[1], col) for p, col in dump_columns()]
REQUIRED = [r for r in REQUIRED if r not in OPEN]


def replay(gpu: str, fmt: str, column: str) -> tuple[int, int]:
    path = HWDATA / f"{gpu}_{fmt}.npz"
    if not path.exists():
        pytest.skip(f"{path} not available")
    with np.load(path) as data:
        if column not in data.files:
            pytest.skip(f"{path.name} has no {column}")
    # The rows as dots, with the README's quirks (tolerance_helpers.dump_dots, shared with the
    # tolerance tests and scripts/gen_evidence_doc.py). For fp16 output dot() rounds c to fp16
    # (RNE) itself, as the experiment did before the call.
    _, _, a, b, c, want = dump_dots(path, column)
    out = "fp16" if column == "d_fp16" else "fp32"
    got = dot(a, b, c, inputs=fmt, accumulator=gpu, out=out)
    return int((got.view(np.uint32) == want.view(np.uint32)).sum()), want.size


@pytest.mark.parametrize("gpu,fmt,column", REQUIRED, ids=["-".join(r) for r in REQUIRED])
def test_dump_replays_bit_for_bit(gpu, fmt, column):
    same, total = replay(gpu, fmt, column)
    assert (same, total) == (5000, 5000)


# The fp32 dumps of block FMAs whose GEMM takes the exact fast path (kept bits beyond both
# significands: B200's FP8, 48 bits): the GEMM of 100 dumped rows against their 100 columns
# holds each row's dot on its diagonal, bit for bit (the dot replays the GPU above).
FAST = [(g, f, col) for g, f, col in REQUIRED + OPEN
        if col == "d_fp32" and isinstance(get_accumulator(g, f), BlockFMA) and get_accumulator(g, f).frac_bits >= 40]


@pytest.mark.parametrize("gpu,fmt,column", FAST, ids=["-".join(r) for r in FAST])
def test_gemm_fast_path_equals_the_dot(gpu, fmt, column):
    path = HWDATA / f"{gpu}_{fmt}.npz"
    if not path.exists():
        pytest.skip(f"{path} not available")
    _, _, a, b, c, _ = dump_dots(path, column)
    got = np.concatenate([np.diag(gemm(a[i : i + 100], b[i : i + 100].T, np.diag(c[i : i + 100]), inputs=fmt,
                                       accumulator=gpu)) for i in range(0, len(c), 100)])
    np.testing.assert_array_equal(got.view(np.uint32), dot(a, b, c, inputs=fmt, accumulator=gpu).view(np.uint32))


@pytest.mark.parametrize("gpu,fmt,column", OPEN, ids=["-".join(r) for r in OPEN])
def test_open_targets_run(gpu, fmt, column):
    same, total = replay(gpu, fmt, column)
    assert total == 5000 and 0 <= same <= total
    print(f"{gpu} {fmt} {column}: {same}/{total} (open target)")


@pytest.mark.parametrize(
    "change",
    [dict(frac_bits=23), dict(frac_bits=25), dict(term_rounding="rd"), dict(block=4), dict(out_rounding="rne")],
    ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()),
)
def test_dump_rejects_a_model_one_parameter_off(change):
    """The dumps discriminate: changing any one A100 parameter breaks the replay."""
    path = HWDATA / "a100_fp16.npz"
    if not path.exists():
        pytest.skip("hwdata not available")
    data = np.load(path)
    a, b, c = (data[k].view(np.float32) for k in ("a", "b", "c"))
    acc = dataclasses.replace(get_accumulator("a100", "fp16"), **change)
    got = dot(a, b, c, inputs="fp16", accumulator=acc)
    assert (got.view(np.uint32) == data["d_fp32"]).sum() < 4990
