"""The libraries fpemu's casts and decodes are compared with, each behind one small interface:
ml_dtypes' scalar types, numpy's float16/float32 casts, torch's ``Tensor.to`` (CPU or CUDA).
ml_dtypes and torch are imported only when an adapter that needs them runs."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..formats import Format, get_format


class Backend:
    """A reference implementation: which formats it has, how it casts and decodes.

    Subclasses fill in :meth:`dtypes`, :meth:`cast` and :meth:`decode`; :meth:`missing`
    returns why the backend cannot run (None when it can).
    """

    name = "backend"
    sources: tuple[str, ...] = ("f32", "f64")
    #: the :func:`fpemu.like` convention that claims to reproduce this backend's casts
    convention: str | None = None

    def missing(self) -> str | None:
        return None

    def version(self) -> str:
        """The release of the library behind the backend ("" when unknown)."""
        return ""

    def label(self) -> str:
        """The backend's name with the release compared, e.g. ``ml_dtypes 0.7.0``."""
        return f"{self.name} {self.version()}".strip()

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
    convention = "ml_dtypes"
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
        "float8_e5m3fnu": "float8_e5m3fnu",  # ml_dtypes 0.7 and later (dtypes() leaves it out before)
    }

    def missing(self) -> str | None:
        try:
            import ml_dtypes  # noqa: F401
        except ImportError:
            return "ml_dtypes is not installed"
        return None

    def version(self) -> str:
        import ml_dtypes

        return str(ml_dtypes.__version__)

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

    def version(self) -> str:
        return str(np.__version__)

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
    convention = "torch"

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

    def version(self) -> str:
        import torch

        return str(torch.__version__)

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
