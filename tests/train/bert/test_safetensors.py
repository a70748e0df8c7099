"""The safetensors reader and writer: round trips of every dtype, the files of the
``safetensors`` library itself both ways (skipped without it), and every corrupt header refused
with one error naming the file and the problem."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fpemu.errors import RunError
from fpemu.train.bert.safetensors import ModelFileError, read_metadata, read_safetensors, write_safetensors

RNG = np.random.default_rng(7)
TENSORS = {
    "f32": RNG.standard_normal((3, 5)).astype(np.float32),
    "f64": RNG.standard_normal(4),
    "f16": RNG.standard_normal((2, 2, 2)).astype(np.float16),
    "i64": np.arange(-3, 9, dtype=np.int64).reshape(3, 4),
    "i8": np.array([-128, 0, 127], dtype=np.int8),
    "u8": np.array([0, 255], dtype=np.uint8),
    "b": np.array([True, False, True]),
    "scalar": np.float32(2.5).reshape(()),
    "empty": np.zeros((0, 3), np.float32),
}


def test_round_trip_of_every_dtype(tmp_path):
    path = tmp_path / "m.safetensors"
    write_safetensors(path, TENSORS, {"format": "np"})
    got = read_safetensors(path)
    assert sorted(got) == sorted(TENSORS) and read_metadata(path) == {"format": "np"}
    for name, want in TENSORS.items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape
        assert np.array_equal(got[name], want), name
        assert not got[name].flags.writeable  # a view of the read-only mapped file
    header_len = int.from_bytes(path.read_bytes()[:8], "little")
    assert header_len % 8 == 0  # the data starts aligned


def test_bf16_is_written_exactly_and_read_as_float32(tmp_path):
    v = np.float32([1.0, -2.5, 2.0**-130, np.inf, 3.0e38]).copy()
    v = (v.view(np.uint32) & 0xFFFF0000).view(np.float32)  # values bf16 holds
    path = tmp_path / "b.safetensors"
    write_safetensors(path, {"w": v}, bf16=("w",))
    raw = json.loads(path.read_bytes()[8 : 8 + int.from_bytes(path.read_bytes()[:8], "little")])
    assert raw["w"]["dtype"] == "BF16" and raw["w"]["data_offsets"] == [0, 10]
    back = read_safetensors(path)["w"]
    assert back.dtype == np.float32 and np.array_equal(back.view(np.uint32), v.view(np.uint32))
    with pytest.raises(ValueError, match="BF16 cannot hold exactly"):
        write_safetensors(path, {"w": np.float32([1.0 + 2.0**-10])}, bf16=("w",))
    with pytest.raises(TypeError, match="dtype complex128"):
        write_safetensors(path, {"c": np.zeros(2, complex)})


def test_names_asked_for(tmp_path):
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"a": np.ones(2, np.float32), "b": np.zeros(1, np.float32)})
    assert list(read_safetensors(path, names=["b"])) == ["b"]
    with pytest.raises(ModelFileError, match="has no tensor 'c'"):
        read_safetensors(path, names=["a", "c"])


def test_against_the_safetensors_library(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    plain = {k: v for k, v in TENSORS.items() if k != "scalar"}
    write_safetensors(ours, plain, {"k": "v"})
    loaded = st.load_file(str(ours))
    assert all(np.array_equal(loaded[k], v) and loaded[k].dtype == v.dtype for k, v in plain.items())
    st.save_file(plain, str(theirs), metadata={"k": "v"})
    got = read_safetensors(theirs)
    assert all(np.array_equal(got[k], v) and got[k].dtype == v.dtype for k, v in plain.items())
    assert read_metadata(theirs) == {"k": "v"}


def _file(tmp_path, header: bytes, data: bytes = b"", length: int | None = None):
    path = tmp_path / "bad.safetensors"
    path.write_bytes((len(header) if length is None else length).to_bytes(8, "little") + header + data)
    return path


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)) -> bytes:
    return json.dumps({"t": {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}}).encode()


@pytest.mark.parametrize("make,says", [
    (lambda p: (p / "bad.safetensors").write_bytes(b"\x01\x02") or p / "bad.safetensors", "shorter than the 8-byte"),
    (lambda p: _file(p, b"{}", length=10**6), "runs past the end of the file"),
    (lambda p: _file(p, b"{not json"), "the header is not JSON"),
    (lambda p: _file(p, b"[1, 2]"), "not a JSON object"),
    (lambda p: _file(p, b'{"__metadata__": {"a": 1}}'), "__metadata__ must map names to strings"),
    (lambda p: _file(p, _entry(dtype="F8_E4M3"), bytes(8)), "unknown dtype 'F8_E4M3'"),
    (lambda p: _file(p, _entry(shape=(-1,)), bytes(8)), "not a list of sizes"),
    (lambda p: _file(p, _entry(offsets=(0, 16)), bytes(8)), "outside the 8 bytes of data"),
    (lambda p: _file(p, _entry(offsets=(8, 0)), bytes(8)), "outside the 8 bytes of data"),
    (lambda p: _file(p, _entry(shape=(3,)), bytes(8)), "needs 12 bytes, its data_offsets give 8"),
    (lambda p: _file(p, b'{"t": {"dtype": "F32"}}'), "needs dtype, shape and data_offsets"),
    (lambda p: _file(p, b'{"t": 1}'), "needs dtype, shape and data_offsets"),
])
def test_corrupt_headers_are_one_clear_error(tmp_path, make, says):
    path = make(tmp_path)
    with pytest.raises(ModelFileError, match=says) as info:
        read_safetensors(path)
    assert str(info.value).startswith(f"{path} is not a valid safetensors file: ")
    assert isinstance(info.value, RunError)  # exit status 1 on the command line


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.safetensors"
    path.write_bytes(b"")
    with pytest.raises(ModelFileError, match="0 bytes"):
        read_safetensors(path)
