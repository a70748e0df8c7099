"""Encode real numbers into any :class:`~fpemu.formats.Format`, decode codes, and quantize.

One generic kernel (:mod:`fpemu.codec.generic_kernel`) serves every format, rounding mode and
option: it splits each float64 into sign, exponent and a 53-bit integer significand, drops
the bits below the format's quantum with integer arithmetic, rounds, and assembles the code.
Speed-only paths (:mod:`fpemu.codec.fast`) exist only where they are provably identical to
it, and each is tested against it; one function, :func:`encode_path`, decides which path a
call takes (:mod:`fpemu.codec.dispatch`).

The package, bottom up: ``option_names`` and ``options`` (modes and policies:
:class:`Conversion`, checked once per call), ``inputs`` (the arrays the kernels accept, the
``via`` step), ``chunks`` (chunk sizes and scratch buffers), ``rounding`` and ``specials``
(the rounding decision, overflow and NaN rules) with ``generic_kernel`` and ``exact_kernel``
(exact input) over them, ``fast`` (the speed-only paths), ``dispatch`` (which path),
``encoder``, ``decoder``, ``quantizer`` and ``scaled_blocks`` (the functions), ``explainer``
and ``rules`` (one number in plain words), ``conventions`` (other libraries' rules as
options: elements and MX blocks), and ``bit_views``/``foreign``/``exports``/``returns``
(torch, ml_dtypes and DLPack arrays in; codes and values out as theirs).

Other fpemu packages import the codec through the names below, never a module inside it.

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
>>> encode_path("e4m3", Conversion(overflow="saturate"), np.float32)  # the path that encode takes
'top_half'
"""

import numpy as np  # noqa: F401  (the examples above)

from .bit_views import foreign_codes, is_torch
from .chunks import MX_CHUNK, last_axis_max, scratch
from .conventions import MXRule, convention_rules, like, names_with, resolve_convention
from .dask_arrays import is_dask
from .decoder import decode
from .dispatch import PATHS, encode_path
from .encoder import encode, encode_array
from .exact_numbers import decimal_text, exact_decimal, exact_number, fraction_float, fraction_text
from .explainer import explain, explain_facts
from .foreign import as_numpy, to_ml_dtypes, to_torch
from .inputs import integers_to_float64
from .option_names import (
    NAN_POLICIES_WITH_NAN, NAN_POLICIES_WITHOUT_NAN, OVERFLOW_ALIASES, STOCHASTIC, STOCHASTIC_WITH_BITS, check_random,
    is_stochastic,
)
from .options import OVERFLOW_MODES, ROUNDING_MODES, Conversion
from .quantizer import quantize
from .returns import check_returns, deliver_values
from .rounding import sr_key
from .rules import next_step_above_max, overflow_inclusive, overflow_threshold, overflow_words, rounding_rules
from .scaled_blocks import encode_scaled_blocks, encode_scaled_by_block_max

__all__ = ["encode", "decode", "quantize", "explain", "Conversion", "like", "resolve_convention", "to_ml_dtypes", "to_torch", "ROUNDING_MODES",
           "OVERFLOW_MODES", "integers_to_float64", "encode_path", "PATHS"]

#: The names other fpemu packages use (beside __all__'s): the pipelines' entries (mx encodes
#: its elements through encode_array, encode_scaled_blocks and encode_scaled_by_block_max,
#: keys its stochastic rounding with sr_key and shares the chunk sizes, scratch buffers and
#: last_axis_max), the option vocabulary, the conventions' MX rules, exact numbers and
#: explain's facts (the command line, teach), other libraries' arrays (testing), and the
#: returns= option and foreign arrays as NumPy (the matrix unit).
FOR_PACKAGES = ("encode_array", "encode_scaled_blocks", "encode_scaled_by_block_max", "sr_key", "MX_CHUNK", "scratch",
                "last_axis_max", "is_dask", "check_random",
                "is_stochastic", "STOCHASTIC", "STOCHASTIC_WITH_BITS", "NAN_POLICIES_WITH_NAN",
                "NAN_POLICIES_WITHOUT_NAN", "OVERFLOW_ALIASES", "MXRule", "convention_rules", "names_with", "exact_number",
                "exact_decimal", "decimal_text", "fraction_float", "fraction_text", "explain_facts", "rounding_rules",
                "next_step_above_max", "overflow_inclusive", "overflow_threshold", "overflow_words", "is_torch", "foreign_codes",
                "check_returns", "deliver_values", "as_numpy")
