"""Post-training quantization of the trained transformer: every linear layer of the blocks runs
with weights and activations in FP8 or FP4, the loss and the logits compared with FP32.

* ``fp8``: per-tensor E4M3 as TransformerEngine runs inference: each weight scaled by its own
  amax, each activation by the amax calibrated on training windows (static scales; values
  beyond them saturate);
* ``mxfp8``: MXFP8 E4M3, blocks of 32 along K, E8M0 scales (NVIDIA's ``rceil``);
* ``mxfp4``: MXFP4 (E2M1, blocks of 32, E8M0 scales, OCP's rule);
* ``nvfp4``: NVFP4 (E2M1, blocks of 16, UE4M3 block and FP32 tensor scales);
* ``fp8_block``: DeepSeek-V3's blockwise FP8 (TE ``Float8BlockScaling``): activations in 1x128
  tiles, weights in 128x128 blocks, E4M3 with power-of-two scales of each tile's own amax
  (:mod:`fpemu.train.blockwise_fp8`), FP32 sums.

The embeddings, the output layer, layer norm and attention stay in FP32, as post-training
quantization tools leave them by default.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ... import mx
from ...formats import get_format
from ...scaling import scale_from_amax
from ..blockwise_fp8 import LinearBlockwiseFP8
from ..linears import LinearFP32
from ..recipes import fp8_cast
from .config import GPTConfig
from .precision import LINEARS, GPTPrecision
from .task import GPTTask, batch

INFER_FORMATS = ("fp8", "mxfp8", "mxfp4", "nvfp4", "fp8_block")
_BLOCKS = {"mxfp8": ("mxfp8_e4m3", {"scale_rounding": "rceil"}), "mxfp4": ("mxfp4", {}), "nvfp4": ("nvfp4", {})}


class LinearPTQ(LinearFP32):
    """An inference-only linear layer with quantized weights and activations.

    >>> lin = LinearPTQ("nvfp4")
    >>> lin.fwd(np.ones((2, 16), np.float32), np.ones((16, 3), np.float32), None)[0][0].tolist()
    [16.0, 16.0, 16.0]
    """

    def __init__(self, fmt: str) -> None:
        if fmt not in INFER_FORMATS:
            raise ValueError(f"unknown inference format {fmt!r}; choose from {', '.join(INFER_FORMATS)}")
        self.name = fmt
        self.low = get_format("e4m3" if fmt in ("fp8", "mxfp8", "fp8_block") else "e2m1")
        self.calibrating = False
        self.amax = np.float32(0.0)  # the activations' calibrated amax (fp8)

    def _per_tensor(self, t: np.ndarray, amax: np.float32) -> tuple[np.ndarray, np.float32]:
        """``t`` cast with the scale of ``amax`` (TE's rule, :func:`fpemu.scale_from_amax`)."""
        return fp8_cast(t, self.low, np.float32(scale_from_amax(amax, self.low.max)[()]))

    def fwd(self, x, w, b, record=True):
        if self.calibrating:
            self.amax = np.maximum(self.amax, np.float32(np.abs(x).max()))
            return super().fwd(x, w, b)
        if self.name == "fp8":
            (xq, ix), (wq, iw) = self._per_tensor(x, self.amax or np.float32(np.abs(x).max())), \
                self._per_tensor(w, np.float32(np.abs(w).max()))
            y = (xq @ wq) * ix * iw
        elif self.name == "fp8_block":
            y = LinearBlockwiseFP8().fwd(x, w, None)[0]
        else:
            block, kw = _BLOCKS[self.name]
            xq = np.asarray(mx.quantize(x, block, axis=1, **kw).dequantize(), np.float32)
            wq = np.asarray(mx.quantize(w, block, axis=0, **kw).dequantize(), np.float32)
            y = xq @ wq
        return (y if b is None else y + b), None


def ptq_precision(fmt: str, cfg: GPTConfig) -> GPTPrecision:
    """A policy with every block's linear layers quantized to ``fmt`` (the rest FP32)."""
    blocks = [{name: LinearPTQ(fmt) for name in LINEARS} for _ in range(cfg.n_layer)]
    lins = [lin for b in blocks for lin in b.values()]
    return GPTPrecision(name=fmt, variant="ptq", low=lins[0].low, blocks=blocks, head=LinearFP32(), linears=lins)


def calibrate(prec: GPTPrecision, params: dict, task: GPTTask, windows: int = 64, seed: int = 0) -> None:
    """Record every quantized layer's activation amax on ``windows`` training windows."""
    from .model import forward

    x, _ = batch(task.train, np.random.default_rng([seed, 0xCA1]), windows, task.config.context)
    for lin in prec.linears:
        lin.calibrating = True
    forward(params, x, task.config, prec)
    for lin in prec.linears:
        lin.calibrating = False


def quantized_inference(params: dict, task: GPTTask, formats=INFER_FORMATS, seed: int = 0,
                        progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """One row per format (FP32 first): validation loss, perplexity, its change, and the logits'
    error against FP32 (relative RMS, largest absolute error, top-1 agreement). ``progress(i,
    n)`` is called after each format.

    >>> from .loop import train_gpt, make_gpt_task
    >>> t = make_gpt_task(0, n_train=3000, n_val=600, n_eval=4)
    >>> rows = quantized_inference(train_gpt("fp32", steps=2, task=t)[1], t, ("nvfp4",))
    >>> [r["format"] for r in rows], rows[0]["top1_agreement"]
    (['fp32', 'nvfp4'], 1.0)
    """
    from .loop import evaluate

    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        loss32, acc32, ref = evaluate(params, task)
        rows = [_row("fp32", loss32, acc32, ref, ref, loss32)]
        for fmt in formats:
            prec = ptq_precision(fmt, task.config)
            calibrate(prec, params, task, seed=seed)
            loss, acc, logits = evaluate(params, task, prec)
            rows.append(_row(fmt, loss, acc, logits, ref, loss32))
            if progress is not None:
                progress(len(rows) - 1, len(formats))
    return rows


def _row(fmt: str, loss: float, acc: float, logits: np.ndarray, ref: np.ndarray, loss32: float) -> dict:
    err = logits.astype(np.float64) - ref
    return {
        "format": fmt, "loss": loss, "perplexity": math.exp(loss),
        "perplexity_change": 100.0 * (math.exp(loss - loss32) - 1.0), "accuracy": acc,
        "logit_rel_rms": float(np.sqrt(np.mean(err**2)) / np.sqrt(np.mean(ref.astype(np.float64) ** 2))),
        "logit_max_abs": float(np.abs(err).max()),
        "top1_agreement": float(np.mean(np.argmax(logits, 1) == np.argmax(ref, 1))),
    }


def inference_table(rows: list[dict]) -> str:
    """The rows of :func:`quantized_inference` as a text table."""
    head = ("format", "val loss", "perplexity", "change", "accuracy", "logit rel. RMS err", "max |dlogit|", "top-1 = fp32")
    body = [(r["format"], f"{r['loss']:.4f}", f"{r['perplexity']:.4f}", f"{r['perplexity_change']:+.2f}%",
             f"{100 * r['accuracy']:.1f}%", f"{100 * r['logit_rel_rms']:.2f}%", f"{r['logit_max_abs']:.3f}",
             f"{100 * r['top1_agreement']:.1f}%") for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in [head, *body])
