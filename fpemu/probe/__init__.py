"""Infer a matrix unit's accumulator: probe a live device with feature tests.

``features`` (:func:`probe`, :class:`ProbeResult`, :func:`probe_report`: the feature tests
and what their answers say) and ``cli`` (``fpemu probe``).

>>> found = probe(fake_device("v100"), "fp16")
>>> (found.model.block, found.model.frac_bits, found.model.out_rounding), found.nearest
((4, 23, 'rz'), ['v100', 'volta'])
"""

from .cli import PROBE_INPUTS, cmd_probe, register_cli
from .features import ProbeResult, fake_device, probe, probe_report

__all__ = ["PROBE_INPUTS", "ProbeResult", "cmd_probe", "fake_device", "probe", "probe_report", "register_cli"]
