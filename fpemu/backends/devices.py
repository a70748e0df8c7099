"""Matrix products on a device (torch on the CPU or a GPU, for crosscheck's matmul rows and the
``run_dot`` that ``fpemu probe`` questions a GPU with), and fake devices that answer with an
fpemu accumulator preset, for testing without a GPU."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..accumulator import Accumulator, accumulator_names, dot, get_accumulator


def _torch_matmul(device: str) -> Callable[[np.ndarray, np.ndarray, str], np.ndarray]:
    """A run_matmul for compare_matmul that multiplies through torch on ``device``.

    CUDA: fp16/bf16 with fp32 output (``torch.mm(..., out_dtype=torch.float32)``), tf32
    (``allow_tf32``), FP8 through ``torch._scaled_mm`` (unit scales, fp32 output). CPU: fp32
    and fp16/bf16 matmuls (output in the input format) and ``torch._scaled_mm`` for FP8.
    """
    import torch

    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "e4m3": getattr(torch, "float8_e4m3fn", None),
          "e5m2": getattr(torch, "float8_e5m2", None)}  # fmt: skip

    def run(A: np.ndarray, B: np.ndarray, inputs: str) -> np.ndarray:
        a = torch.from_numpy(A.astype(np.float32)).to(device)
        b = torch.from_numpy(B.astype(np.float32)).to(device)
        if inputs == "tf32":
            old = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                return (a @ b).cpu().numpy()
            finally:
                torch.backends.cuda.matmul.allow_tf32 = old
        if inputs == "fp32":
            return (a @ b).cpu().numpy()
        if inputs in ("fp16", "bf16") and device == "cpu":
            return (a.to(dt[inputs]) @ b.to(dt[inputs])).float().numpy()
        if inputs in ("fp16", "bf16"):
            # fp32 output straight from the unit (torch >= 2.8 on CUDA); no fp16 epilogue.
            return torch.mm(a.to(dt[inputs]), b.to(dt[inputs]), out_dtype=torch.float32).cpu().numpy()
        one = torch.tensor(1.0, device=device)
        bt = b.to(dt[inputs]).t().contiguous().t()  # _scaled_mm wants B column-major
        return torch._scaled_mm(a.to(dt[inputs]), bt, scale_a=one, scale_b=one, out_dtype=torch.float32).cpu().numpy()

    return run


RunDot = Callable[[np.ndarray, np.ndarray, str], np.ndarray]


def torch_device(device: str = "cuda") -> RunDot:
    """run_dot through torch on a GPU: the R experiments of one question become one
    (R x K) @ (K x R) matrix product whose diagonal holds the R dot products (fp16/bf16 with
    fp32 output, tf32 fp32 matmul, FP8 through ``torch._scaled_mm``); sizes are padded with
    zeros to multiples of 16, and zero products take no part in the sums."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch has no CUDA device here")
    mm = _torch_matmul(device)

    def run(a: np.ndarray, b: np.ndarray, inputs: str) -> np.ndarray:
        R, K = a.shape
        Rp, Kp = -(-R // 16) * 16, -(-K // 16) * 16
        A = np.zeros((Rp, Kp))
        B = np.zeros((Kp, Rp))
        A[:R, :K] = a
        B[:K, :R] = b.T
        return np.diagonal(mm(A, B, inputs))[:R].astype(np.float64)

    return run


def fake_device(preset: str | Accumulator) -> RunDot:
    """A stand-in device: ``run_dot(a, b, inputs)`` computed by an fpemu accumulator preset
    (fp32 output, zero accumulator), for testing :func:`probe` without a GPU.

    >>> run = fake_device("a100")
    >>> run(np.array([[1.0, 2.0**-24]]), np.array([[1.0, 1.0]]), "fp16").tolist()
    [1.0]
    """

    def run(a: np.ndarray, b: np.ndarray, inputs: str) -> np.ndarray:
        return dot(a, b, None, inputs=inputs, accumulator=get_accumulator(preset, inputs))

    return run


def _presets(inputs: str) -> dict[str, Accumulator]:
    """Every named accumulator that takes these inputs (GPU names and architectures)."""
    found = {}
    for name in accumulator_names():
        try:
            found[name] = get_accumulator(name, inputs)
        except ValueError:
            continue
    return found
