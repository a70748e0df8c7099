"""Assertions for kernel tests, in the style of ``numpy.testing``.

Two kinds: bits (:mod:`.ulps`: ``assert_bits_equal``, ``assert_ulp_close`` against fpemu's
golden answer) and model tolerances (:mod:`.tolerance`: ``assert_within_model``, whether an
output is one a matrix unit of a model or a family of models can produce, from intervals that
:mod:`.bound` derives from the model's parameters with the arithmetic of :mod:`.enclosure`).
"""

from .tolerance import FAMILIES, ModelInterval, assert_within_model, members_of, model_family, model_interval
from .ulps import as_codes, assert_bits_equal, assert_ulp_close, ulp_distance

__all__ = [
    "assert_bits_equal",
    "assert_ulp_close",
    "as_codes",
    "ulp_distance",
    "assert_within_model",
    "model_interval",
    "model_family",
    "members_of",
    "ModelInterval",
    "FAMILIES",
]
