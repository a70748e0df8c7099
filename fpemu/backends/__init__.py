"""The implementations fpemu is checked against, each behind one small interface.

* Casts and decodes (:mod:`.casts`): a :class:`Backend` per library, :class:`MlDtypesBackend` (ml_dtypes'
  scalar types), :class:`NumpyBackend` (numpy's float16 and float32 casts) and
  :class:`TorchBackend` (``Tensor.to`` on the CPU or a CUDA device); :data:`BACKENDS` names
  them for ``fpemu crosscheck --backend``.
* Matrix products on a device (:mod:`.devices`): :func:`_torch_matmul` (torch on the CPU or a GPU: crosscheck's
  matmul rows) and :func:`torch_device`, the ``run_dot`` ``fpemu probe`` questions a GPU with.
* Fake devices, for testing without a GPU (:mod:`.devices`): :func:`fake_device` answers a ``run_dot`` with an
  fpemu accumulator preset, and :func:`_presets` lists the presets that take an input format.

ml_dtypes and torch are imported only when an adapter that needs them runs.
"""

from __future__ import annotations

from .casts import BACKENDS, Backend, MlDtypesBackend, NumpyBackend, TorchBackend
from .devices import RunDot, _presets, _torch_matmul, fake_device, torch_device

__all__ = ["Backend", "MlDtypesBackend", "NumpyBackend", "TorchBackend", "BACKENDS", "RunDot", "fake_device",
           "torch_device", "_presets", "_torch_matmul"]  # fmt: skip
