"""Matrix products of a device compared element for element with fpemu's accumulator models:
torch's CPU matmuls with the IEEE fp32 loop, a CUDA GPU's with the preset of that GPU."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..backends import _torch_matmul
from ..cases import check_size, matmul_inputs
from .table import Row


#: CUDA compute capability (major, minor) -> accumulator preset (an fpemu GPU name).
CAPABILITY_PRESETS = {(7, 0): "v100", (7, 5): "t4", (8, 0): "a100", (8, 6): "ampere", (8, 7): "ampere",
                      (8, 9): "ada", (9, 0): "h100", (10, 0): "b200"}  # fmt: skip


def compare_matmul(
    run_matmul: Callable[[np.ndarray, np.ndarray, str], np.ndarray],
    preset: str,
    inputs: str,
    *,
    k: int,
    m: int = 64,
    n: int = 64,
    out: str = "fp32",
    backend: str = "torch-cuda",
    seed: int = 0,
) -> Row:
    """Compare a device's matrix product with fpemu's :func:`fpemu.accumulator.gemm`.

    ``run_matmul(A, B, inputs)`` returns the device's (m, n) result as float32 values (in
    ``out``'s format); A and B are float64 arrays whose values are in the input format.

    >>> from fpemu.accumulator import gemm
    >>> fake = lambda A, B, inputs: gemm(A, B, inputs=inputs, accumulator="h100")
    >>> compare_matmul(fake, "h100", "fp16", k=16, backend="fake").status
    'identical'
    """
    from ..accumulator import BlockModel, RoundedModel, gemm, get_accumulator

    check_size("m * n", m * n, 1)
    A, B = matmul_inputs(inputs, m, k, n, seed)
    with np.errstate(over="ignore", invalid="ignore"):  # a device's float64 beyond fp32 becomes Inf, as on the device
        want = np.asarray(run_matmul(A, B, inputs), dtype=np.float32)
    if want.shape != (m, n):
        raise ValueError(f"{backend} returned a {want.shape} result for a ({m}, {k}) @ ({k}, {n}) product")
    acc = get_accumulator(preset, inputs)
    got = gemm(A, B, inputs=inputs, accumulator=acc, out=out)
    same = want.view(np.uint32) == got.view(np.uint32)
    row = Row(f"matmul K={k} {out}", inputs, backend, cases=int(same.size), identical=int(same.sum()))
    if isinstance(acc, BlockModel):
        row.note = f"vs accumulator {acc.name} (block {acc.block}, F={acc.frac_bits}, {acc.out_rounding})"
    else:
        held = f"in {acc.acc_format}" if isinstance(acc, RoundedModel) else "rounded once"
        row.note = f"vs accumulator {acc.name} ({acc.kind} {held}, exact products)"
    if not same.all():
        i, j = np.argwhere(~same)[0]
        row.status = "differs"
        row.first_mismatch = f"C[{i},{j}]: {backend} {float(want[i, j])!r}, fpemu {float(got[i, j])!r}"
        row.reproduced_by = "see `fpemu fit` / `fpemu probe` for the device's parameters"
    return row


def cpu_matmul_rows(ks: Sequence[int] = (16, 256, 1024)) -> list[Row]:
    """torch CPU matmuls (fp32, bf16 and fp16 with output in the input format, FP8 through
    ``torch._scaled_mm``) against fpemu's IEEE fp32 loop (exact products, one fp32 rounding
    per addition, then the output rounding)."""
    run = _torch_matmul("cpu")
    build = _torch_cpu_build()
    rows = []
    for inputs, out in (("fp32", "fp32"), ("bf16", "bf16"), ("fp16", "fp16"), ("e4m3", "fp32"), ("e5m2", "fp32")):
        for k in ks:
            try:
                row = compare_matmul(run, "fp32", inputs, k=k, out=out, backend="torch")
            except (RuntimeError, NotImplementedError, TypeError, AttributeError) as exc:
                note = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                row = Row(f"matmul K={k} {out}", inputs, "torch", status="unsupported", note=note)
            row.note = f"{row.note}; {build}" if row.note else build
            rows.append(row)
    return rows


def _torch_cpu_build() -> str:
    """What decides how torch's CPU matmul sums: its version, the vector ISA it dispatches
    to and its thread count (so a row from one machine is not read as true of every one)."""
    import torch

    try:
        isa = torch.backends.cpu.get_cpu_capability()
    except (AttributeError, RuntimeError):
        isa = "unknown ISA"
    return f"torch {torch.__version__} CPU, {isa}, {torch.get_num_threads()} threads"


def gpu_matmul_rows(device: str = "cuda") -> list[Row]:
    """GPU matmul rows: fp16, bf16, tf32, e4m3, e5m2 against this GPU's accumulator preset,
    for one block of K and for four blocks (the recursive accumulation)."""
    import torch

    from ..accumulator import get_accumulator

    cap = tuple(torch.cuda.get_device_capability())
    name = torch.cuda.get_device_name()
    preset = CAPABILITY_PRESETS.get(cap)
    if preset is None:
        return [Row("matmul", "-", "torch-cuda", status="unsupported", note=f"{name} sm_{cap[0]}{cap[1]}: no preset")]
    run = _torch_matmul(device)
    rows = []
    for inputs in ("fp16", "bf16", "tf32", "e4m3", "e5m2"):
        try:
            block = get_accumulator(preset, inputs).block
        except ValueError as exc:
            rows.append(Row("matmul", inputs, "torch-cuda", status="unsupported", note=str(exc)))
            continue
        for k in (block, 4 * block):
            try:
                row = compare_matmul(run, preset, inputs, k=k)
            except (RuntimeError, TypeError, AttributeError) as exc:  # op missing on this torch/GPU
                row = Row(f"matmul K={k} fp32", inputs, "torch-cuda", status="unsupported", note=str(exc).splitlines()[0])
            row.note = f"{name}: {row.note}"
            rows.append(row)
    return rows
