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
from .codec import decode, encode, explain, like, quantize, resolve_convention, to_ml_dtypes, to_torch

__all__ = [
    "FORMATS",
    "Format",
    "format_names",
    "get_format",
    "encode",
    "decode",
    "quantize",
    "explain",
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
from .accumulator import Accumulator, get_accumulator, dot, gemm  # noqa: E402
from . import mx  # noqa: E402  (block formats; imports the codec above)
from .scaling import ScaledTensor, scale_from_amax, scaled_cast  # noqa: E402
from . import train  # noqa: E402  (mixed-precision training demo)
from . import testing  # noqa: E402  (assertions for kernel tests)
from .version import __version__  # noqa: E402, F401  (fpemu.__version__)
