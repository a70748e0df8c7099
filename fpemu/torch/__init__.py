"""Your own PyTorch model through fpemu's formats, recipes and matrix units (torch optional:
this package imports it on first use, ``import fpemu`` never does).

* :func:`emulate` replaces every ``nn.Linear`` of a model by one whose three GEMMs (forward,
  dgrad, wgrad) run through fpemu: its operands cast to a format with its scaling (BF16, FP16,
  FP8 with TransformerEngine's per-tensor scaling, MXFP8/MXFP6/MXFP4, NVFP4 with its recipe),
  multiplied by torch in float32 (formats only) or by a matrix-unit model bit for bit
  (``accumulator="h100"``, ``"b200"``, ...).
* ``with emulating(model):`` sends the matrix products of forward code (attention's QK^T and
  PV: ``torch.matmul``, ``@``, ``torch.bmm``, ``torch.mm``, ``F.linear``) the same way.
* :func:`report` shows, per emulated GEMM, the SQNR of its output and its operands' amax,
  flushed and saturated fractions and scales.

Every precision is :mod:`fpemu.train`'s own linear layer (the one the training demos use); this
package moves tensors to it and back. docs/torch.md has the guide.

The package, bottom up: ``precisions`` (a format, recipe and accumulator checked, and the layer
they make), ``statistics`` (what a report counts, the table and JSON), ``sites`` (an emulated
GEMM, the autograd function), ``modules`` (the Linear replacement, what is left in float32),
``mode`` (the ``emulating`` block), ``api`` (the three functions), and ``bert`` (the NumPy
MiniLM encoder of :mod:`fpemu.train.bert` as a torch module through the bridge:
``from fpemu.torch.bert import bert_module, encode``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["emulate", "emulating", "report"]


def _api():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ImportError("fpemu.torch needs PyTorch: pip install torch (fpemu itself needs numpy only)") from None
    from . import api

    return api


def emulate(module: Any, **options: Any) -> Any:
    """See :func:`fpemu.torch.api.emulate`: every ``nn.Linear`` of ``module`` through fpemu."""
    return _api().emulate(module, **options)


def emulating(module: Any = None, **options: Any) -> Any:
    """See :func:`fpemu.torch.api.emulating`: matmul/bmm/mm/F.linear calls through fpemu in a block."""
    return _api().emulating(module, **options)


def report(target: Any, **options: Any) -> Any:
    """See :func:`fpemu.torch.api.report`: per emulated GEMM, SQNR, flushed/saturated, amax, scales."""
    return _api().report(target, **options)
