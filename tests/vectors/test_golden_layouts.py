"""The .bin and .h layouts byte by byte, as docs/golden.md describes them; damaged files and
oversized headers refused with the reason; the page's code blocks equal the test files it shows.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from fpemu import cli
from fpemu.vectors import MAX_HEADER_BYTES, cast_vectors, read_vectors, verify_vectors, write_vectors
from fpemu.vectors.binary import array_key, binary_bytes, parse_binary
from fpemu.vectors.cheader import c_header_text, parse_c_header

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "golden.md"


def _header(data: bytes) -> tuple[str, dict]:
    line = data[16 : data.index(b"\n", 16)].decode("ascii")
    return line, json.loads(line)


# ---- .bin -------------------------------------------------------------------------------------
def test_bin_layout_byte_by_byte(tmp_path):
    path = tmp_path / "e4m3_sat.bin"
    assert cli.main(["vectors", "e4m3", "--overflow", "saturate", "--out", str(path)]) == 0
    data = path.read_bytes()
    assert data[:16] == b"fpemu-vectors 1\n"
    line, doc = _header(data)
    assert list(doc) == ["byte_order", "alignment", "arrays", "meta"]
    assert (doc["byte_order"], doc["alignment"]) == ("little", 64)
    assert doc["arrays"] == {
        "input_bits": {"dtype": "uint32", "offset": 512, "nbytes": 6200, "shape": [1550]},
        "code": {"dtype": "uint8", "offset": 6720, "nbytes": 1550, "shape": [1550]},
        "value": {"dtype": "float64", "offset": 8320, "nbytes": 12400, "shape": [1550]},
    }
    assert len(data) == 8320 + 12400  # the file ends with the last array
    header_end = 16 + len(line) + 1
    assert set(data[header_end:512]) == {0} and set(data[6200 + 512 : 6720]) == {0} and set(data[8270:8320]) == {0}
    # What a C++ reader searches for, and what follows it.
    for name, a in doc["arrays"].items():
        key = array_key(name, a["dtype"])
        assert line.count(key) == 1
        assert line[line.index(key) + len(key) :].startswith(f'{a["offset"]}, "nbytes": {a["nbytes"]}, "shape": ')
    # Raw little-endian values where the header says: 1.0f is the 56th input, E4M3 0x38, 1.0.
    i = 55
    assert struct.unpack_from("<I", data, 512 + 4 * i) == (0x3F800000,)
    assert data[6720 + i] == 0x38
    assert struct.unpack_from("<d", data, 8320 + 8 * i) == (1.0,)


def test_bin_header_on_the_page_is_the_real_one():
    data = binary_bytes(cast_vectors("e4m3", "edge", overflow="saturate"))
    shown = re.search(r"e4m3_sat.bin` begins\n\n  ```\n  (fpemu-vectors 1)\n  (\{.*?)\.\.\.\n  ```", DOC.read_text())
    assert shown is not None, "the example header of the .bin layout is gone from docs/golden.md"
    assert data.startswith((shown.group(1) + "\n" + shown.group(2)).encode())


def test_bin_offsets_stay_aligned_whatever_the_header_length():
    for k in range(40):  # metadata of every length moves the first offset across 64-byte steps
        v = {"meta": {"pad": "x" * k}, "a": np.arange(3, dtype=np.uint16), "b": np.ones((2, 3), np.float32)}
        data = binary_bytes(v)
        line, doc = _header(data)
        offsets = [a["offset"] for a in doc["arrays"].values()]
        assert all(o % 64 == 0 for o in offsets) and offsets[0] == -(-(17 + len(line)) // 64) * 64
        back = parse_binary(data)
        assert back["meta"] == {"pad": "x" * k} and back["b"].shape == (2, 3) and back["a"].tolist() == [0, 1, 2]


def test_bin_damage_is_refused_with_the_reason(tmp_path):
    data = binary_bytes(cast_vectors("e2m1", "edge", nan="zero"))
    with pytest.raises(ValueError, match="does not start with"):
        parse_binary(b"PK" + data)
    with pytest.raises(ValueError, match="'value' does not fit the file"):
        parse_binary(data[:-1])
    with pytest.raises(ValueError, match="header line has no end"):
        parse_binary(data[:30])
    with pytest.raises(ValueError, match="not JSON"):
        parse_binary(data[:16] + b"{oops\n")
    path = tmp_path / "v.bin"  # one code changed: the re-check finds exactly that case
    write_vectors(cast_vectors("e5m2", "edge"), path)
    raw = bytearray(path.read_bytes())
    code = _header(bytes(raw))[1]["arrays"]["code"]
    raw[code["offset"] + 7] ^= 1
    path.write_bytes(bytes(raw))
    n, same = verify_vectors(path)
    assert same == n - 1


# ---- .h ---------------------------------------------------------------------------------------
def test_header_names_metadata_and_arrays(tmp_path):
    path = tmp_path / "2024-golden.v1.h"
    assert cli.main(["vectors", "e4m3", "--overflow", "saturate", "--out", str(path)]) == 0
    text = path.read_text()
    assert "#ifndef FPEMU_VECTORS_V2024_GOLDEN_V1_H\n#define FPEMU_VECTORS_V2024_GOLDEN_V1_H\n#include <stdint.h>\n" in text
    for line in ['#define V2024_GOLDEN_V1_FORMAT "e4m3"', '#define V2024_GOLDEN_V1_OVERFLOW "saturate"',
                 "#define V2024_GOLDEN_V1_N 1550", "#define V2024_GOLDEN_V1_CODE_LEN 1550",
                 "static const uint32_t FPEMU_VECTORS_UNUSED v2024_golden_v1_input_bits[1550] = {",
                 "static const uint8_t FPEMU_VECTORS_UNUSED v2024_golden_v1_code[1550] = {",
                 "static const uint64_t FPEMU_VECTORS_UNUSED v2024_golden_v1_value[1550] = {",
                 "/* value: float64 bit patterns, shape (1550,) */"]:  # fmt: skip
        assert line + "\n" in text, line
    assert "V2024_GOLDEN_V1_NAN" not in text  # null: in the JSON line only

    def hexes(name: str) -> list[str]:
        return re.findall(r"0x[0-9A-F]+", re.search(name + r"\[1550\] = \{(.*?)\};", text, re.DOTALL).group(1))

    # 1.0 is the 56th input: 0x3F800000 -> 0x38 = 1.0 (0x3FF0000000000000 as a double).
    assert hexes("input_bits")[55] == "0x3F800000" and hexes("code")[55] == "0x38"
    assert hexes("value")[55] == "0x3FF0000000000000"
    assert read_vectors(path)["meta"] == cast_vectors("e4m3", "edge", overflow="saturate")["meta"]


def test_header_tables_and_comment_safe_json():
    v = {"meta": {"type": "demo", "note": "a */ inside", "n": 2, "scale": 0.5, "big": float("inf")},
         "t": np.arange(6, dtype=np.uint16).reshape(2, 3), "f": np.array([1.5, -0.0], dtype=np.float32)}  # fmt: skip
    text = c_header_text(v, "demo")
    code = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)  # string literals out: comments left
    assert "a *\\/ inside" in text and code.count("*/") == code.count("/*") == 5
    assert "#define DEMO_T_LEN 6\n#define DEMO_T_ROWS 2\n#define DEMO_T_COLS 3\n" in text
    assert "#define DEMO_SCALE 0.5\n" in text and "DEMO_BIG" not in text and '#define DEMO_NOTE "a */ inside"' in text
    assert "demo_t[2][3] = {\n    {0x0000, 0x0001, 0x0002},\n    {0x0003, 0x0004, 0x0005},\n};" in text
    assert "demo_f[2] = {\n    0x3FC00000, 0x80000000,\n};" in text
    back = parse_c_header(text)
    assert back["meta"] == v["meta"] and back["t"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["f"].view(np.uint32).tolist() == [0x3FC00000, 0x80000000]


def test_header_size_limit(tmp_path):
    ok = {"meta": {"type": "demo"}, "a": np.zeros(MAX_HEADER_BYTES, np.uint8)}
    assert parse_c_header(c_header_text(ok, "ok"))["a"].size == MAX_HEADER_BYTES
    with pytest.raises(ValueError, match=f"1,048,577 bytes of arrays, too many for a C header .at most {MAX_HEADER_BYTES:,}"):
        c_header_text({"meta": {}, "a": np.zeros(MAX_HEADER_BYTES + 1, np.uint8)}, "big")


def test_cli_refuses_an_absurd_header_in_one_line(tmp_path, capsys):
    out = tmp_path / "bf16.h"
    assert cli.main(["vectors", "bf16", "--kind", "exhaustive", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == ("fpemu: error: these vectors hold 5,494,272 bytes of arrays (392,448 cases), too many for a C "
                   "header (at most 1,048,576 bytes): write .bin and read it at run time, or fewer cases "
                   "(--kind random --n ...)\n")  # fmt: skip
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("argv, least", [
    (["e4m3", "--kind", "random", "--n", "10000000"], "130,000,000"),  # input, code and value: 13 bytes a case
    (["mxfp4", "--kind", "random", "--n", "100000"], "12,800,000"),  # 32 float32 inputs a block
    (["fp16", "--accumulator", "h100", "--n", "5000", "--k", "64"], "2,560,000"),  # a and b: 64 fp32 each
])  # fmt: skip
def test_cli_refuses_a_large_header_before_the_work(tmp_path, capsys, monkeypatch, argv, least):
    from fpemu.vectors import cli as vectors_cli

    for name in ("cast_vectors", "block_vectors", "dot_vectors"):
        monkeypatch.setattr(vectors_cli, name, lambda *a, **k: pytest.fail("the vectors were made"))
    assert cli.main(["vectors", *argv, "--out", str(tmp_path / "v.h")]) == 2
    assert capsys.readouterr().err == (
        f"fpemu: error: --n {int(argv[argv.index('--n') + 1]):,} makes at least {least} bytes of arrays, too many "
        f"for a C header (at most 1,048,576 bytes): write .bin and read it at run time, or fewer cases\n")
    assert not any(tmp_path.iterdir())


def test_a_changed_header_value_is_caught(tmp_path):
    path = tmp_path / "v.h"
    write_vectors(cast_vectors("e5m2", "edge"), path)
    text = path.read_text()
    start = text.index("v_code[")
    first = re.compile(r"0x([0-9A-F]{2})").search(text, start)
    changed = f"0x{int(first.group(1), 16) ^ 1:02X}"
    path.write_text(text[: first.start()] + changed + text[first.end() :])
    n, same = verify_vectors(path)
    assert same == n - 1
    with pytest.raises(ValueError, match="not an fpemu vector header"):
        parse_c_header("#include <stdint.h>\n")


# ---- the page shows the test files as they are ---------------------------------------------------
def _code(path: Path) -> str:
    """A test file below its docstring and __future__ import, blank lines collapsed."""
    text = path.read_text()
    text = text[text.index('"""', 3) + 3 :].replace("from __future__ import annotations\n", "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


@pytest.mark.parametrize("name", ["test_golden_workflow.py", "test_golden_example.py"])
def test_the_page_shows_the_test_file(name):
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.DOTALL | re.MULTILINE)
    shown = [re.sub(r"\n{3,}", "\n\n", b).strip() for b in blocks if not b.startswith(">>>")]
    assert _code(ROOT / "tests" / "vectors" / name) in shown, f"docs/golden.md no longer shows tests/vectors/{name} as it is"
