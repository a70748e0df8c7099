"""Encode real numbers into any :class:`~fpemu.formats.Format`, decode codes, and quantize.

One generic kernel (:mod:`fpemu.codec.kernel`) serves every format, rounding mode and option:
it splits each float64 into sign, exponent and a 53-bit integer significand, drops the bits
below the format's quantum with integer arithmetic, rounds, and assembles the code. Fast paths
exist only where they are provably identical to it, and each is tested against it.

The package, bottom up: ``options`` (modes and policies: :class:`Conversion`, checked once per call), ``inputs``
(the arrays the kernels accept), ``kernel`` (the generic encoder and decoder), ``encoder``,
``decoder`` and ``quantizer`` (the public functions with their fast paths), ``explainer``
(one number in plain words), ``conventions`` (other libraries' rules as options), and
``bit_views``/``foreign`` (torch, ml_dtypes and DLPack arrays in; codes out as theirs).

>>> encode([1.0625, 1.1875, 464.0, 1000.0], "e4m3")
array([ 56,  58, 126, 127], dtype=uint8)
>>> encode([1000.0], "e4m3", overflow="saturate")
array([126], dtype=uint8)
>>> decode(encode([0.3], "e2m1"), "e2m1")
array([0.5])
>>> quantize(np.float32([1.0, 1e-9]), "bf16", rounding="up")
array([1.0000000e+00, 1.0040822e-09], dtype=float32)
>>> encode([1000.0], "e4m3", conversion=Conversion(overflow="saturate"))  # the options as one record
array([126], dtype=uint8)
"""

import numpy as np  # noqa: F401  (the examples above)

from .conventions import like, resolve_convention
from .decoder import decode
from .encoder import encode
from .explainer import explain
from .foreign import to_ml_dtypes, to_torch
from .odd import integers_to_float64
from .options import OVERFLOW_MODES, ROUNDING_MODES, Conversion
from .quantizer import quantize

__all__ = ["encode", "decode", "quantize", "explain", "Conversion", "like", "resolve_convention", "to_ml_dtypes", "to_torch", "ROUNDING_MODES",
           "OVERFLOW_MODES", "integers_to_float64"]
