"""The ``.bin`` layout of vector files: raw little-endian arrays after a one-line JSON header,
readable from C++ or CUDA host code without a JSON library (docs/golden.md shows the reader).

The file, byte by byte:

1. the magic line ``fpemu-vectors 1`` and a newline (16 bytes; ``1`` is the layout's version);
2. one line of ASCII JSON, ended by a newline (``json.dumps`` escapes every newline inside)::

     {"byte_order": "little", "alignment": 64, "arrays": {"NAME": {"dtype": "uint32",
      "offset": 128, "nbytes": 6200, "shape": [1550]}, ...}, "meta": {...}}

   with exactly these separators (``", "`` and ``": "``) and this key order, so that the
   text ``"NAME": {"dtype": "DTYPE", "offset": `` occurs once in the line (the writer checks
   it) and is followed by ``OFFSET, "nbytes": NBYTES``: a C++ reader finds an array with one
   ``find`` and one ``sscanf``;
3. zero bytes up to the first array, then every array in the order listed: its elements
   little-endian in C (row-major) order, ``nbytes`` bytes at ``offset`` (counted from the
   start of the file, a multiple of 64), zero bytes between arrays; the file ends with the
   last array.

dtypes are numpy's names: ``uint8``, ``uint16``, ``uint32``, ``uint64``, ``float32``,
``float64``.

>>> import numpy as np, io
>>> v = {"meta": {"type": "demo"}, "code": np.array([0x38, 0x7E], dtype=np.uint8)}
>>> data = binary_bytes(v)
>>> data[:16], data[16:data.index(b"{\\"dtype")]
(b'fpemu-vectors 1\\n', b'{"byte_order": "little", "alignment": 64, "arrays": {"code": ')
>>> back = parse_binary(data); back["code"].tolist(), back["meta"]
([56, 126], {'type': 'demo'})
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ALIGNMENT", "MAGIC", "array_key", "binary_bytes", "parse_binary", "read_binary", "write_binary"]

#: The first line of every ``.bin`` vector file (the digit is the layout's version).
MAGIC = b"fpemu-vectors 1\n"
#: Every array starts at a multiple of this many bytes from the start of the file.
ALIGNMENT = 64
_DTYPES = ("uint8", "uint16", "uint32", "uint64", "float32", "float64")


def array_key(name: str, dtype: str) -> str:
    """The text a reader searches the header line for; the array's offset follows it.

    >>> array_key("code", "uint8")
    '"code": {"dtype": "uint8", "offset": '
    """
    return json.dumps({name: {"dtype": dtype, "offset": None}})[1:-len("null}}")]


def _up(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


def _header(arrays: dict[str, np.ndarray], meta: dict, start: int) -> tuple[bytes, list[int]]:
    """The JSON line (newline included) with the arrays laid out from ``start`` on."""
    table, offsets, at = {}, [], start
    for name, arr in arrays.items():
        offsets.append(at)
        table[name] = {"dtype": arr.dtype.name, "offset": at, "nbytes": arr.nbytes, "shape": list(arr.shape)}
        at = _up(at + arr.nbytes)
    doc = {"byte_order": "little", "alignment": ALIGNMENT, "arrays": table, "meta": meta}
    return (json.dumps(doc, ensure_ascii=True) + "\n").encode("ascii"), offsets


def binary_bytes(vectors: dict[str, Any]) -> bytes:
    """The whole ``.bin`` file of ``vectors`` (a ``meta`` dict and named arrays)."""
    arrays = {k: np.ascontiguousarray(v) for k, v in vectors.items() if k != "meta"}
    for name, arr in arrays.items():
        if arr.dtype.name not in _DTYPES:
            raise ValueError(f"array {name!r} has dtype {arr.dtype}: the .bin layout holds {', '.join(_DTYPES)}")
    start = _up(len(MAGIC) + 2)
    while True:  # the offsets are written in the header, whose length moves the first offset
        line, offsets = _header(arrays, vectors["meta"], start)
        if _up(len(MAGIC) + len(line)) == start:
            break
        start = _up(len(MAGIC) + len(line))
    text = line.decode("ascii")
    for name, arr in arrays.items():
        if text.count(array_key(name, arr.dtype.name)) != 1:
            raise ValueError(f"array name {name!r} is not unique in the .bin header; rename it")
    out = bytearray(MAGIC + line)
    for arr, at in zip(arrays.values(), offsets):
        out += bytes(at - len(out))
        out += arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
    return bytes(out)


def parse_binary(data: bytes, where: str = "the file") -> dict[str, Any]:
    """The ``meta`` dict and the arrays (native byte order, bit for bit) of a ``.bin`` file's bytes."""
    if not data.startswith(MAGIC):
        raise ValueError(f"{where} is not an fpemu .bin vector file: it does not start with {MAGIC!r}")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise ValueError(f"{where}: the JSON header line has no end (truncated or damaged)")
    try:
        doc = json.loads(data[len(MAGIC) : end].decode("ascii"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{where}: the header line is not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("byte_order") != "little" or not isinstance(doc.get("arrays"), dict):
        raise ValueError(f"{where}: a .bin vector file has a little-endian JSON header line")
    try:
        return _arrays(data, doc, end, where)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{where}: the header line lacks a field ({exc!r}): not an fpemu .bin vector file") from None


def _arrays(data: bytes, doc: dict, end: int, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {"meta": doc["meta"]}
    for name, a in doc["arrays"].items():
        if a["dtype"] not in _DTYPES:
            raise ValueError(f"{where}: array {name!r} has an unknown dtype {a['dtype']!r}")
        dt = np.dtype(a["dtype"]).newbyteorder("<")
        count = int(np.prod(a["shape"], dtype=np.int64))
        if a["nbytes"] != count * dt.itemsize or a["offset"] < end or a["offset"] + a["nbytes"] > len(data):
            raise ValueError(f"{where}: array {name!r} does not fit the file (truncated or damaged)")
        arr = np.frombuffer(data, dtype=dt, count=count, offset=a["offset"])
        out[name] = arr.astype(dt.newbyteorder("="), copy=True).reshape(a["shape"])
    return out


def write_binary(vectors: dict[str, Any], path: Path) -> None:
    """Write ``vectors`` to exactly ``path`` in the ``.bin`` layout."""
    Path(path).write_bytes(binary_bytes(vectors))


def read_binary(path: Path) -> dict[str, Any]:
    """Read a ``.bin`` vector file back, bit for bit."""
    return parse_binary(Path(path).read_bytes(), str(path))
