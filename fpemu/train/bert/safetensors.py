"""The safetensors file format in NumPy: a reader (the file memory-mapped, no copy of F32
tensors) and a writer, with no dependency beyond numpy.

A file is an 8-byte little-endian header length ``n``, ``n`` bytes of JSON (tensor name ->
``{"dtype", "shape", "data_offsets": [begin, end]}``, offsets into the data that follows, and an
optional ``"__metadata__"`` of strings), then the raw little-endian bytes of every tensor
(the format's specification: github.com/huggingface/safetensors, README "Format").

Every way a header can be wrong (a length past the file, JSON that does not parse, an unknown
dtype, a shape whose size disagrees with its byte range, a range outside the data) is one
:class:`ModelFileError` naming the file and the problem.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "t.safetensors")
>>> write_safetensors(path, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, {"note": "x"})
>>> t = read_safetensors(path)
>>> t["w"].tolist(), read_metadata(path)
([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], {'note': 'x'})
"""

from __future__ import annotations

import json
import mmap
import os

import numpy as np

from ...errors import RunError
from ...outputs import atomic_output

__all__ = ["ModelFileError", "read_safetensors", "read_metadata", "write_safetensors", "DTYPES"]

# safetensors dtype name -> the NumPy dtype of its bytes (little-endian). BF16 is read as its
# 16-bit patterns and widened to float32 exactly (NumPy has no bfloat16).
DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?",
}
_NAMES = {np.dtype(v): k for k, v in DTYPES.items() if k not in ("BF16", "U16")}
_NAMES[np.dtype("<u2")] = "U16"
_MAX_HEADER = 100 * 2**20  # the reference implementation's own limit (100 MB)


class ModelFileError(RunError):
    """A model file that cannot be read as what it claims to be (exit status 1)."""


def _header(path: str | os.PathLike, buf) -> tuple[dict, dict, int]:
    """(tensor entries, metadata, offset of the data) of the file's bytes ``buf``, checked."""
    def bad(problem: str) -> ModelFileError:
        return ModelFileError(f"{path} is not a valid safetensors file: {problem}")

    if len(buf) < 8:
        raise bad(f"{len(buf)} bytes, shorter than the 8-byte header length")
    n = int.from_bytes(buf[:8], "little")
    if n > len(buf) - 8 or n > _MAX_HEADER:
        raise bad(f"the header length {n} runs past the end of the file ({len(buf)} bytes)")
    try:
        header = json.loads(bytes(buf[8 : 8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"the header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise bad("the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise bad("__metadata__ must map names to strings")
    data_len = len(buf) - 8 - n
    for name, entry in header.items():
        _check_entry(name, entry, data_len, bad)
    return header, metadata, 8 + n


def _check_entry(name: str, entry: object, data_len: int, bad) -> None:
    """One tensor's entry: a known dtype, a shape of sizes >= 0, a byte range inside the data
    whose length is the shape's size times the dtype's width."""
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= set(entry):
        raise bad(f"tensor {name!r} needs dtype, shape and data_offsets")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in DTYPES:
        raise bad(f"tensor {name!r} has the unknown dtype {dtype!r} (known: {', '.join(DTYPES)})")
    if not (isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)):
        raise bad(f"tensor {name!r} has the shape {shape!r}, not a list of sizes >= 0")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= data_len):  # fmt: skip
        raise bad(f"tensor {name!r} has data_offsets {offsets!r} outside the {data_len} bytes of data")
    size = int(np.prod(shape, dtype=np.int64)) * np.dtype(DTYPES[dtype]).itemsize
    if offsets[1] - offsets[0] != size:
        raise bad(f"tensor {name!r} of shape {shape} and dtype {dtype} needs {size} bytes, "
                  f"its data_offsets give {offsets[1] - offsets[0]}")


def _mapped(path: str | os.PathLike):
    """The file's bytes, memory-mapped read-only (an empty file cannot be mapped: its bytes)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def read_safetensors(path: str | os.PathLike, names=None) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file (``names``: only these), as read-only NumPy arrays on
    the memory-mapped file; BF16 tensors come back as float32 (exactly), every other dtype as
    itself. A name asked for that the file lacks is a :class:`ModelFileError`."""
    buf = _mapped(path)
    header, _, start = _header(path, buf)
    wanted = list(header) if names is None else list(names)
    missing = [n for n in wanted if n not in header]
    if missing:
        raise ModelFileError(f"{path} has no tensor {missing[0]!r}" + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else ""))
    out = {}
    for name in wanted:
        entry = header[name]
        begin, end = entry["data_offsets"]
        raw = np.frombuffer(buf, dtype=DTYPES[entry["dtype"]], count=(end - begin) // np.dtype(DTYPES[entry["dtype"]]).itemsize,
                            offset=start + begin).reshape(entry["shape"])
        out[name] = (raw.astype(np.uint32) << 16).view(np.float32) if entry["dtype"] == "BF16" else raw
    return out


def read_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The file's ``__metadata__`` (an empty dict where it has none)."""
    return _header(path, _mapped(path))[1]


def write_safetensors(path: str | os.PathLike, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None,
                      bf16: tuple[str, ...] = ()) -> None:
    """Write ``tensors`` (name -> array of a dtype of :data:`DTYPES`) to ``path``, in name order,
    with ``metadata`` (strings) in the header. The tensors named in ``bf16`` are float32 arrays
    written as BF16; a value that BF16 cannot hold exactly is refused, never rounded here.

    The file is written all at once (:func:`fpemu.outputs.atomic_output`): a failure leaves no
    partial file.
    """
    if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                                         for k, v in metadata.items())):
        raise TypeError("metadata must map strings to strings")
    header: dict = {"__metadata__": dict(metadata)} if metadata else {}
    blobs, offset = [], 0
    for name in sorted(tensors):
        arr = np.asarray(tensors[name])
        arr = arr if arr.flags.c_contiguous else arr.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)
        if name in bf16:
            if arr.dtype != np.float32:
                raise TypeError(f"tensor {name!r} is written as BF16 from float32 values, got {arr.dtype}")
            bits = arr.view(np.uint32)
            if np.any(bits & 0xFFFF):
                raise ValueError(f"tensor {name!r} has values BF16 cannot hold exactly: round them first "
                                 "(fpemu.quantize(x, 'bf16'))")
            arr, dtype = (bits >> 16).astype("<u2"), "BF16"
        else:
            dtype = _NAMES.get(arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype)
            if dtype is None:
                raise TypeError(f"tensor {name!r} has the dtype {arr.dtype}, which safetensors does not hold")
            arr = arr.astype(DTYPES[dtype], copy=False)
        data = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the reference writer pads it
    with atomic_output(path) as tmp, open(tmp, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for data in blobs:
            f.write(data)
