"""fpemu: bit-exact NumPy emulation of the floating-point formats machine learning runs on.

>>> import fpemu
>>> fpemu.encode([1.0, 448.0, 500.0], "e4m3")
array([ 56, 126, 127], dtype=uint8)
>>> fpemu.encode([1.0, 448.0, 500.0], "e4m3", overflow="saturate")
array([ 56, 126, 126], dtype=uint8)
>>> fpemu.decode([0x38, 0x7E], "e4m3")
array([  1., 448.])
"""

from .formats import FORMATS, Format, format_names, get_format
from .codec import Conversion, decode, encode, explain, like, quantize, resolve_convention, to_ml_dtypes, to_torch
from .accumulator import Accumulator, get_accumulator, dot, gemm
from . import mx  # block formats (imports the codec above)
from .scaling import ScaledTensor, scale_from_amax, scaled_cast
from .version import __version__  # noqa: F401  (fpemu.__version__)

__all__ = [
    "FORMATS",
    "Format",
    "format_names",
    "get_format",
    "encode",
    "decode",
    "quantize",
    "explain",
    "Conversion",
    "like",
    "resolve_convention",
    "to_ml_dtypes",
    "to_torch",
    "mx",
    "scaled_cast",
    "scale_from_amax",
    "ScaledTensor",
    "testing",
    "Accumulator",
    "get_accumulator",
    "dot",
    "gemm",
    "train",
]

# Everything above the core is loaded on first use (PEP 562), so ``import fpemu`` costs the
# core alone: ``fpemu.train``, ``fpemu.vectors.make_vectors``, ``from fpemu import testing``
# import their package when first named. (tests/test_import_cost.py holds the core to this.)
_LAZY = ("testing", "train", "teach", "fit", "probe", "crosscheck", "vectors", "cases", "backends", "tables",
         "cli", "errors", "progress", "pages", "torch")


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return importlib.import_module(f"{__name__}.{name}")  # (the import binds it here too)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
