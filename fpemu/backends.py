"""The implementations fpemu is checked against, each behind one small interface.

* Casts and decodes: a :class:`Backend` per library, :class:`MlDtypesBackend` (ml_dtypes'
  scalar types), :class:`NumpyBackend` (numpy's float16 and float32 casts) and
  :class:`TorchBackend` (``Tensor.to`` on the CPU or a CUDA device); :data:`BACKENDS` names
  them for ``fpemu crosscheck --backend``.
* Matrix products on a device: :func:`_torch_matmul` (torch on the CPU or a GPU: crosscheck's
  matmul rows) and :func:`torch_device`, the ``run_dot`` ``fpemu probe`` questions a GPU with.
* Fake devices, for testing without a GPU: :func:`fake_device` answers a ``run_dot`` with an
  fpemu accumulator preset, and :func:`_presets` lists the presets that take an input format.

ml_dtypes and torch are imported only when an adapter that needs them runs.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .accumulator import Accumulator, accumulator_names, dot, get_accumulator
from .formats import Format, get_format

__all__ = ["Backend", "MlDtypesBackend", "NumpyBackend", "TorchBackend", "BACKENDS", "RunDot", "fake_device",
           "torch_device"]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Cast and decode adapters
# ---------------------------------------------------------------------------------------------
class Backend:
    """A reference implementation: which formats it has, how it casts and decodes.

    Subclasses fill in :meth:`dtypes`, :meth:`cast` and :meth:`decode`; :meth:`missing`
    returns why the backend cannot run (None when it can).
    """

    name = "backend"
    sources: tuple[str, ...] = ("f32", "f64")

    def missing(self) -> str | None:
        return None

    def dtypes(self) -> dict[str, Any]:
        """fpemu format name -> the backend's dtype object."""
        raise NotImplementedError

    def cast(self, x: np.ndarray, fmt: str) -> np.ndarray:
        """Codes (right-aligned, as in fpemu) of x cast to the format."""
        raise NotImplementedError

    def decode(self, codes: np.ndarray, fmt: str) -> np.ndarray:
        """float64 values of codes."""
        raise NotImplementedError

    def skip_ops(self, fmt: str) -> dict[str, str]:
        """Operations this backend lacks for fmt (operation -> reason)."""
        return {}


def _uint_for(fmt: Format) -> type:
    return fmt.code_dtype.type


class MlDtypesBackend(Backend):
    """ml_dtypes' scalar types, cast with ``ndarray.astype``."""

    name = "ml_dtypes"
    _NAMES = {
        "bf16": "bfloat16",
        "e4m3": "float8_e4m3fn",
        "e5m2": "float8_e5m2",
        "e4m3fnuz": "float8_e4m3fnuz",
        "e5m2fnuz": "float8_e5m2fnuz",
        "e3m2": "float6_e3m2fn",
        "e2m3": "float6_e2m3fn",
        "e2m1": "float4_e2m1fn",
        "e8m0": "float8_e8m0fnu",
        "float8_e4m3": "float8_e4m3",
        "float8_e3m4": "float8_e3m4",
        "float8_e4m3b11fnuz": "float8_e4m3b11fnuz",
    }

    def missing(self) -> str | None:
        try:
            import ml_dtypes  # noqa: F401
        except ImportError:
            return "ml_dtypes is not installed"
        return None

    def dtypes(self) -> dict[str, Any]:
        import ml_dtypes

        return {f: getattr(ml_dtypes, n) for f, n in self._NAMES.items() if hasattr(ml_dtypes, n)}

    def cast(self, x: np.ndarray, fmt: str) -> np.ndarray:
        f = get_format(fmt)
        width = np.dtype(_uint_for(f))
        with np.errstate(all="ignore"):
            out = x.astype(self.dtypes()[fmt]).view(width)
        return out & f.code_dtype.type((1 << f.bits) - 1) if f.bits < 8 else out

    def decode(self, codes: np.ndarray, fmt: str) -> np.ndarray:
        f = get_format(fmt)
        with np.errstate(invalid="ignore"):
            return codes.astype(f.code_dtype).view(self.dtypes()[fmt]).astype(np.float64)


class NumpyBackend(Backend):
    """numpy's own float16 and float32 casts."""

    name = "numpy"

    def dtypes(self) -> dict[str, Any]:
        return {"fp16": np.float16, "fp32": np.float32}

    def skip_ops(self, fmt: str) -> dict[str, str]:
        # float32 -> float32 is the identity; fp32 has 2**32 codes, too many to decode them all.
        return {"cast f32": "identity", "decode": "2**32 codes"} if fmt == "fp32" else {}

    def cast(self, x: np.ndarray, fmt: str) -> np.ndarray:
        f = get_format(fmt)
        with np.errstate(all="ignore"):
            return x.astype(self.dtypes()[fmt]).view(f.code_dtype)

    def decode(self, codes: np.ndarray, fmt: str) -> np.ndarray:
        f = get_format(fmt)
        with np.errstate(invalid="ignore"):
            return codes.astype(f.code_dtype).view(self.dtypes()[fmt]).astype(np.float64)


class TorchBackend(Backend):
    """torch tensors cast with ``Tensor.to(dtype)`` on a device (CPU or CUDA)."""

    _NAMES = {
        "fp32": "float32",
        "bf16": "bfloat16",
        "fp16": "float16",
        "e4m3": "float8_e4m3fn",
        "e5m2": "float8_e5m2",
        "e4m3fnuz": "float8_e4m3fnuz",
        "e5m2fnuz": "float8_e5m2fnuz",
        "e8m0": "float8_e8m0fnu",
        "e2m1": "float4_e2m1fn_x2",
    }

    def __init__(self, device: str = "cpu"):
        self.device = device
        self.name = "torch" if device == "cpu" else f"torch-{device}"

    def missing(self) -> str | None:
        try:
            import torch
        except ImportError:
            return "torch is not installed"
        if self.device == "cuda" and not torch.cuda.is_available():
            return "torch has no CUDA device here"
        return None

    def dtypes(self) -> dict[str, Any]:
        import torch

        return {f: getattr(torch, n) for f, n in self._NAMES.items() if hasattr(torch, n)}

    def skip_ops(self, fmt: str) -> dict[str, str]:
        if fmt == "fp32":
            return {"cast f32": "identity", "decode": "2**32 codes"}
        if fmt == "e2m1":  # a packed pair type: no element-wise cast or widening in torch
            reason = "torch.float4_e2m1fn_x2 is a packed pair type without casts"
            return {"cast f32": reason, "cast f64": reason, "decode": reason}
        return {}

    def _int_view(self, f: Format):
        import torch

        return {8: torch.uint8, 16: torch.int16, 32: torch.int32}[f.storage_bits]

    def cast(self, x: np.ndarray, fmt: str) -> np.ndarray:
        import torch

        f = get_format(fmt)
        t = torch.from_numpy(np.ascontiguousarray(x)).to(self.device)
        out = t.to(self.dtypes()[fmt]).view(self._int_view(f)).cpu().numpy()
        return out.view(f.code_dtype)

    def decode(self, codes: np.ndarray, fmt: str) -> np.ndarray:
        import torch

        f = get_format(fmt)
        raw = codes.astype(f.code_dtype).view({8: np.uint8, 16: np.int16, 32: np.int32}[f.storage_bits])
        t = torch.from_numpy(np.ascontiguousarray(raw)).to(self.device).view(self.dtypes()[fmt])
        return t.to(torch.float64).cpu().numpy()


#: Backend name -> factory. ``all`` runs every one of them.
BACKENDS: dict[str, Callable[[], Backend]] = {
    "ml_dtypes": MlDtypesBackend,
    "numpy": NumpyBackend,
    "torch": lambda: TorchBackend("cpu"),
    "torch-cuda": lambda: TorchBackend("cuda"),
}


# ---------------------------------------------------------------------------------------------
# Matrix products through torch
# ---------------------------------------------------------------------------------------------
def _torch_matmul(device: str) -> Callable[[np.ndarray, np.ndarray, str], np.ndarray]:
    """A run_matmul for compare_matmul that multiplies through torch on ``device``.

    CUDA: fp16/bf16 with fp32 output (``torch.mm(..., out_dtype=torch.float32)``), tf32
    (``allow_tf32``), FP8 through ``torch._scaled_mm`` (unit scales, fp32 output). CPU: fp32
    and fp16/bf16 matmuls (output in the input format) and ``torch._scaled_mm`` for FP8.
    """
    import torch

    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "e4m3": getattr(torch, "float8_e4m3fn", None),
          "e5m2": getattr(torch, "float8_e5m2", None)}  # fmt: skip

    def run(A: np.ndarray, B: np.ndarray, inputs: str) -> np.ndarray:
        a = torch.from_numpy(A.astype(np.float32)).to(device)
        b = torch.from_numpy(B.astype(np.float32)).to(device)
        if inputs == "tf32":
            old = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                return (a @ b).cpu().numpy()
            finally:
                torch.backends.cuda.matmul.allow_tf32 = old
        if inputs == "fp32":
            return (a @ b).cpu().numpy()
        if inputs in ("fp16", "bf16") and device == "cpu":
            return (a.to(dt[inputs]) @ b.to(dt[inputs])).float().numpy()
        if inputs in ("fp16", "bf16"):
            # fp32 output straight from the unit (torch >= 2.8 on CUDA); no fp16 epilogue.
            return torch.mm(a.to(dt[inputs]), b.to(dt[inputs]), out_dtype=torch.float32).cpu().numpy()
        one = torch.tensor(1.0, device=device)
        bt = b.to(dt[inputs]).t().contiguous().t()  # _scaled_mm wants B column-major
        return torch._scaled_mm(a.to(dt[inputs]), bt, scale_a=one, scale_b=one, out_dtype=torch.float32).cpu().numpy()

    return run


RunDot = Callable[[np.ndarray, np.ndarray, str], np.ndarray]


def torch_device(device: str = "cuda") -> RunDot:
    """run_dot through torch on a GPU: the R experiments of one question become one
    (R x K) @ (K x R) matrix product whose diagonal holds the R dot products (fp16/bf16 with
    fp32 output, tf32 fp32 matmul, FP8 through ``torch._scaled_mm``); sizes are padded with
    zeros to multiples of 16, and zero products take no part in the sums."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch has no CUDA device here")
    mm = _torch_matmul(device)

    def run(a: np.ndarray, b: np.ndarray, inputs: str) -> np.ndarray:
        R, K = a.shape
        Rp, Kp = -(-R // 16) * 16, -(-K // 16) * 16
        A = np.zeros((Rp, Kp))
        B = np.zeros((Kp, Rp))
        A[:R, :K] = a
        B[:K, :R] = b.T
        return np.diagonal(mm(A, B, inputs))[:R].astype(np.float64)

    return run


# ---------------------------------------------------------------------------------------------
# Fake devices: fpemu's own presets
# ---------------------------------------------------------------------------------------------
def fake_device(preset: str | Accumulator) -> RunDot:
    """A stand-in device: ``run_dot(a, b, inputs)`` computed by an fpemu accumulator preset
    (fp32 output, zero accumulator), for testing :func:`probe` without a GPU.

    >>> run = fake_device("a100")
    >>> run(np.array([[1.0, 2.0**-24]]), np.array([[1.0, 1.0]]), "fp16").tolist()
    [1.0]
    """

    def run(a: np.ndarray, b: np.ndarray, inputs: str) -> np.ndarray:
        return dot(a, b, None, inputs=inputs, accumulator=get_accumulator(preset, inputs))

    return run


def _presets(inputs: str) -> dict[str, Accumulator]:
    """Every named accumulator that takes these inputs (GPU names and architectures)."""
    found = {}
    for name in accumulator_names():
        try:
            found[name] = get_accumulator(name, inputs)
        except ValueError:
            continue
    return found
