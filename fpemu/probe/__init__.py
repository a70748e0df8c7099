"""Infer a matrix unit's accumulator: probe a live device with feature tests.

The feature tests (:func:`probe`, :class:`ProbeResult`, :func:`probe_report`: what their
answers say) live in :mod:`fpemu.fit.feature_tests`, below this package: the command here
(``cli``, ``fpemu probe``) runs them, and fit imports nothing from here. (The FP8 fp16-output
experiment that ran here too is research now: ``python -m research.fp8_fp16 probe``.)

>>> found = probe(fake_device("v100"), "fp16")
>>> (found.model.block, found.model.frac_bits, found.model.out_rounding), found.nearest
((4, 23, 'rz'), ['v100', 'volta'])
"""

from ..fit.feature_tests import PROBE_INPUTS, ProbeResult, fake_device, probe, probe_report
from .cli import cmd_probe
from .cli import register_cli  # noqa: F401  (the command line's glue: reachable, not exported)

__all__ = ["PROBE_INPUTS", "ProbeResult", "cmd_probe", "fake_device", "probe", "probe_report"]
