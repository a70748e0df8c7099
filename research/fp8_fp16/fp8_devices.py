"""Where ``python -m research.fp8_fp16 probe`` sends its rows: ``run(a, b, c, inputs)`` returns
the fp16 results of ``sum_k a[:, k] * b[:, k] + c`` (float64 values), one per row.

* :func:`scaled_mm_device`: ``torch._scaled_mm`` (cuBLASLt's FP8 GEMM on a GPU) with fp16
  output and c as its fp16 bias, optionally with ``use_fast_accum``; on ``cpu``, torch's own
  FP8 GEMM (a reference for the plumbing, not a tensor core).
* :func:`mma_sync_device`: the PTX instruction ``mma.sync.aligned.m16n8k32.row.col.f16.<t>.<t>.f16``
  compiled at run time with NVRTC (``torch.cuda._compile_kernel``), one warp per 8 rows.
* :func:`staged_device`: a fake device computed by a staged model (tests, ``--device fake:NAME``).

torch is imported only when a torch device is built. :func:`device_info` collects what a
record of raw results must say: device, driver, CUDA, cuBLASLt and torch versions.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime
import platform
import subprocess
from typing import Callable

import numpy as np

from .staged import NAMED, Staged
from .staged_kernel import staged_dot

RunFp16 = Callable[[np.ndarray, np.ndarray, np.ndarray, str], np.ndarray]


def staged_device(model: str | Staged) -> RunFp16:
    """A fake device: a staged model (or the name of one in NAMED) computes every row."""
    if isinstance(model, str):
        if model not in NAMED:
            raise ValueError(f"unknown staged model {model!r}: {', '.join(NAMED)}")
        model = NAMED[model]
    return lambda a, b, c, inputs: staged_dot(model, a, b, c, inputs)


def _torch_fp8(inputs: str):
    import torch

    return {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[inputs]


def e4m3_partners(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """cuBLASLt multiplies no E5M2 matrix by another: the same products as E5M2 a times E4M3 b.
    A b that is an E4M3 value stays; otherwise a product of a power-of-two b is split anew (a
    normal E5M2 a, a normal E4M3 power of two: the same significand and exponent sum). Returns
    (a, b, rows where every product could be kept).

    >>> a2, b2, ok = e4m3_partners(np.array([[1.5, 0.5], [2.0**-16, 1.0]]), np.array([[2.0**-12, 1.0], [2.0**-15, 0]]))
    >>> a2[0].tolist(), b2[0].tolist(), ok.tolist()
    ([0.0234375, 0.5], [0.015625, 1.0], [True, False])
    """
    from fpemu.codec import quantize

    a2, b2 = a.astype(np.float64).copy(), b.astype(np.float64).copy()
    ok = np.ones(a.shape, dtype=bool)
    for i, k in zip(*np.nonzero(quantize(b, "e4m3") != b)):
        m, e = np.frexp(abs(b[i, k]))
        done = False
        if m == 0.5:  # a power of two: move exponent between the two factors
            p = a[i, k] * b[i, k]
            for eb in sorted(range(-6, 9), key=lambda x: abs(x - (e - 1))):
                x = p / 2.0**eb
                if abs(x) >= 2.0**-14 and float(quantize(x, "e5m2")) == x:
                    a2[i, k], b2[i, k], done = x, 2.0**eb, True
                    break
        ok[i, k] = done
    return a2, b2, ok.all(axis=1)


def _adapt_e5m2(ex):
    """The rows a cuBLASLt path can run: E5M2 experiments with E4M3 b (same products)."""
    if ex.inputs != "e5m2":
        return ex
    a, b, rows = e4m3_partners(ex.a, ex.b)
    return type(ex)(ex.inputs, a[rows], b[rows], ex.c[rows], ex.family[rows], ex.what[rows])


def scaled_mm_device(device: str = "cuda", fast_accum: bool = False) -> RunFp16:
    """R rows as one (R x 32) @ (32 x R) ``torch._scaled_mm`` with unit scales, fp16 output
    and bias c (fp16): the diagonal holds the R results (R padded to a multiple of 16; zero
    products and a zero bias take no part). b goes in as E4M3 when every b value is one (E5M2
    experiments: cuBLASLt has no E5M2 x E5M2 GEMM; ``run.adapt`` rewrites the rows so)."""
    import torch

    def run(a: np.ndarray, b: np.ndarray, c: np.ndarray, inputs: str) -> np.ndarray:
        from fpemu.codec import quantize

        R, K = a.shape
        Rp = -(-R // 16) * 16
        A, B, C = np.zeros((Rp, K)), np.zeros((K, Rp)), np.zeros(Rp)
        A[:R], B[:, :R], C[:R] = a, b.T, c
        b_inputs = "e4m3" if inputs == "e5m2" and np.array_equal(quantize(b, "e4m3"), b) else inputs
        At = torch.from_numpy(A.astype(np.float32)).to(device).to(_torch_fp8(inputs))
        Bt = torch.from_numpy(B.astype(np.float32)).to(device).to(_torch_fp8(b_inputs)).t().contiguous().t()
        bias = torch.from_numpy(C.astype(np.float16)).to(device)
        one = torch.tensor(1.0, device=device)
        D = torch._scaled_mm(At, Bt, scale_a=one, scale_b=one, bias=bias, out_dtype=torch.float16,
                             use_fast_accum=fast_accum)  # fmt: skip
        return torch.diagonal(D).float().cpu().numpy()[:R].astype(np.float64)

    run.adapt = _adapt_e5m2
    return run


_MMA_SOURCE = r"""
extern "C" __global__ void fp8_mma_f16(const unsigned int* A, const unsigned int* B, const unsigned short* C,
                                       unsigned short* D) {
    // One warp: rows 8w..8w+7 of A (32 FP8 bytes each) times the same rows of B (B's columns, k
    // contiguous), c on the diagonal of the 16x8 accumulator tile; rows 8..15 of A are zero.
    int w = blockIdx.x, lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    const unsigned int* a = A + (8 * w + g) * 8;
    const unsigned int* b = B + (8 * w + g) * 8;
    unsigned int a0 = a[t], a2 = a[4 + t], b0 = b[t], b1 = b[4 + t], zero = 0u;
    unsigned int lo = (g == 2 * t) ? C[8 * w + g] : 0u, hi = (g == 2 * t + 1) ? C[8 * w + g] : 0u;
    unsigned int c0 = lo | (hi << 16), d0, d1;
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.TYPE.TYPE.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};\n"
                 : "=r"(d0), "=r"(d1)
                 : "r"(a0), "r"(zero), "r"(a2), "r"(zero), "r"(b0), "r"(b1), "r"(c0), "r"(zero));
    if (g == 2 * t) D[8 * w + g] = (unsigned short)(d0 & 0xFFFFu);
    if (g == 2 * t + 1) D[8 * w + g] = (unsigned short)(d0 >> 16);
}
"""


def mma_sync_device() -> RunFp16:
    """The mma.sync m16n8k32 FP8 instruction with an fp16 accumulator, compiled with NVRTC."""
    import torch

    kernels = {}

    def run(a: np.ndarray, b: np.ndarray, c: np.ndarray, inputs: str) -> np.ndarray:
        if inputs not in kernels:
            src = _MMA_SOURCE.replace("TYPE", inputs)
            kernels[inputs] = torch.cuda._compile_kernel(src, "fp8_mma_f16")
        R, K = a.shape
        Rp = -(-R // 8) * 8
        dt = _torch_fp8(inputs)
        pad = lambda x: np.concatenate([x, np.zeros((Rp - R,) + x.shape[1:])])  # noqa: E731
        codes = lambda x: torch.from_numpy(pad(x).astype(np.float32)).to(dt).view(torch.uint8).contiguous()  # noqa: E731
        At, Bt = codes(a).view(torch.int32).cuda(), codes(b).view(torch.int32).cuda()
        Ct = torch.from_numpy(pad(c).astype(np.float16)).view(torch.int16).cuda()
        Dt = torch.zeros(Rp, dtype=torch.int16, device="cuda")
        kernels[inputs](grid=(Rp // 8, 1, 1), block=(32, 1, 1), args=[At, Bt, Ct, Dt])
        torch.cuda.synchronize()
        return Dt.cpu().view(torch.float16).float().numpy()[:R].astype(np.float64)

    return run


def gpu_paths() -> dict:
    """The GPU paths the experiment runs, by name (each built lazily; one that cannot run says
    why when it is called)."""
    return {
        "scaled_mm": lambda: scaled_mm_device("cuda"),
        "scaled_mm_fast_accum": lambda: scaled_mm_device("cuda", fast_accum=True),
        "mma_sync": mma_sync_device,
    }


def _cublaslt_version() -> int | None:
    for name in ("cublasLt", "libcublasLt.so.12", "libcublasLt.so.13", "libcublasLt.so.11"):
        path = ctypes.util.find_library(name) if "." not in name else name
        try:
            lib = ctypes.CDLL(path) if path else None
        except OSError:
            continue
        if lib is not None and hasattr(lib, "cublasLtGetVersion"):
            lib.cublasLtGetVersion.restype = ctypes.c_size_t
            return int(lib.cublasLtGetVersion())
    return None


def device_info() -> dict:
    """Device, driver and library versions (what is known; missing items are None)."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "python": platform.python_version()}  # fmt: skip
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            info["device"] = torch.cuda.get_device_name()
            info["capability"] = "sm_" + "".join(map(str, torch.cuda.get_device_capability()))
            driver = getattr(torch._C, "_cuda_getDriverVersion", None)
            info["cuda_driver_api"] = driver() if callable(driver) else None
    except ImportError:
        info["torch"] = None
    info["cublaslt"] = _cublaslt_version()
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,vbios_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)  # fmt: skip
        info["nvidia_smi"] = smi.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        info["nvidia_smi"] = None
    return info
