"""Block-scaled GEMM vector files (fpemu.vectors.block_gemm, ``fpemu vectors FMT --accumulator``):
written, read back, and their buffers decoded here byte by byte from the documented layouts
(128x4 scale tiles from cuBLAS's description, FP4 two codes a byte with element 2i low), the
expected D recomputed by the exact oracle of tests/mma_oracle.py from those decoded codes."""

from __future__ import annotations

import numpy as np
import pytest
from mma_oracle import oracle, same
from mx_helpers import block_array

from fpemu import mx
from fpemu.cli import main
from fpemu.vectors import read_vectors, verify_vectors, write_vectors
from fpemu.vectors.block_gemm import block_gemm_vectors


def scales_from_tiles(buf: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The (rows, cols) scale matrix of a 128x4-tiled buffer, one byte at a time."""
    tiles_per_row = -(-cols // 4)
    out = np.zeros((rows, cols), np.uint8)
    for r in range(rows):
        for c in range(cols):
            tile = (r // 128) * tiles_per_row + c // 4
            out[r, c] = buf[512 * tile + 16 * (r % 32) + 4 * ((r % 128) // 32) + c % 4]
    return out


def codes_from_rows(data: np.ndarray, bits: int, k: int) -> np.ndarray:
    if bits == 8:
        return data[:, :k].copy()
    assert bits == 4
    out = np.zeros((data.shape[0], k), np.uint8)
    out[:, 0::2] = data[:, : (k + 1) // 2] & 0xF
    out[:, 1::2] = data[:, : k // 2] >> 4
    return out


@pytest.mark.parametrize("fmt, acc", [("mxfp8_e4m3", "b200"), ("mxfp4", "mmasim-blackwell"), ("mxfp8_e5m2", "exact")])
@pytest.mark.parametrize("ext", [".npz", ".bin", ".json"])
def test_file_decodes_to_the_oracle(tmp_path, fmt, acc, ext):
    v = block_gemm_vectors(fmt, acc, k=96 if fmt != "mxfp4" else 128, n=3, seed=4)
    path = tmp_path / f"g{ext}"
    write_vectors(v, path)
    r = read_vectors(path)
    m, n, k = r["meta"]["shape"]
    bs, bits = r["meta"]["block_size"], mx.get_block_format(fmt).bits
    A = codes_from_rows(r["a_data"], bits, k)
    Bt = codes_from_rows(r["b_data"], bits, k)
    sa = scales_from_tiles(r["a_scale"], m, k // bs)
    sbt = scales_from_tiles(r["b_scale"], n, k // bs)
    assert r["a_scale"].size == r["b_scale"].size == 512 * -(-(k // bs) // 4)
    qa = block_array(A, sa, fmt, 1, bs)
    qb = block_array(Bt.T.copy(), sbt.T.copy(), fmt, 0, bs)
    c = r["c"].view(np.float32)
    want = oracle(qa, qb, c, acc, None)
    assert same(r["d"].view(np.float32), want)
    assert verify_vectors(path) == (m * n, m * n)


def test_tampered_block_gemm_file_is_caught(tmp_path):
    v = block_gemm_vectors("mxfp8_e4m3", "b200", n=2)
    v["a_scale"] = v["a_scale"].copy()
    v["a_scale"][16] ^= 1  # row 1, K-block 0
    path = tmp_path / "g.npz"
    write_vectors(v, path)
    total, same_ = verify_vectors(path)
    assert total == 4 and same_ < 4


def test_cli_block_gemm(tmp_path, capsys):
    out = tmp_path / "g.bin"
    assert main(["vectors", "nvfp4", "--accumulator", "b200", "--n", "4", "--out", str(out)]) == 0
    assert "16/16 identical" in capsys.readouterr().out
    r = read_vectors(out)
    assert r["meta"]["type"] == "block_gemm" and r["meta"]["alpha"] is not None
    for args, message in ((["--kind", "edge"], "--kind edge does not apply"),
                          (["--accumulator", "h100"], "h100 (hopper) has no block-scaled MMA"),
                          (["--out", str(tmp_path / "z.csv")], "CSV cannot hold")):
        cmd = ["vectors", "mxfp4", "--accumulator", "b200", "--out", str(tmp_path / "x.npz"), *args]
        assert main(cmd) != 0
        assert message in capsys.readouterr().err
