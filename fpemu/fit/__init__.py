"""Infer a matrix unit's accumulator from recorded dumps (a live device: :mod:`fpemu.probe`).

:func:`fit` searches the block-FMA parameter space of :class:`fpemu.accumulator.Accumulator`
(products per block, fraction bits ``F`` kept below the largest exponent, how terms lose their
low bits, output rounding and fraction bits, the exponent a zero accumulator aligns with, and
the CDNA3 grouping variants) for every model that reproduces every row of a dump in the
``hwdata`` layout (``a``, ``b``, ``c`` as fp32 bit patterns, ``d_fp32``/``d_fp16`` results).
Candidates are screened on a few rows first, so the search of a few thousand models takes
seconds. Every named preset is also tried as it is (pairwise and exact models included).

The package, in the order the data flows: ``dumps`` (:func:`load_dump`: a file read and
checked into a :class:`Dump`), ``kernel`` (the batched block-FMA kernel the search runs),
``search`` (the search space and :func:`fit`), ``reporting`` (:func:`report`: the text
``fpemu fit`` prints) and ``cli`` (``fpemu fit``). ``feature_tests`` holds :func:`probe` and
:class:`ProbeResult`, the feature tests that infer a live device's accumulator (re-exported by
:mod:`fpemu.probe`, whose ``fpemu probe`` runs them: probe imports fit, never the reverse);
:func:`fake_device` lives in :mod:`fpemu.backends`.

The FP8 fp16-output campaign of issue 18 (staged models, which no ``Accumulator`` expresses,
and the probes that pinned them) is research, not library: ``research/fp8_fp16/`` at the
repository root (``python -m research.fp8_fp16 probe|fit``). Its result is the h100/b200
presets' fp16 model in :mod:`fpemu.accumulator.units`.
"""

from ..backends import fake_device
from .dumps import Dump, DumpError, load_dump
from .feature_tests import ProbeResult, probe
from .reporting import report
from .search import FitResult, fit

__all__ = ["Dump", "DumpError", "load_dump", "FitResult", "fit", "report", "ProbeResult", "probe", "fake_device"]
