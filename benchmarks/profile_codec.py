"""Where the time of one encode goes: each NumPy call of fpemu's float32 kernels timed by name,
then each source line of the kernels (in-place operators included), beside PyTorch's and
ml_dtypes' whole casts and the floor of a NumPy kernel, in one run.

    python benchmarks/profile_codec.py [--format e4m3] [--n 10000000] [--repeat 5] [--dtype float64]
    python benchmarks/profile_codec.py --mx mxfp8_e4m3     (mx.quantize: its scale and element lines)
    python benchmarks/profile_codec.py --format e2m1 --rounding stochastic_c --sr-bits 8   (any option)

The numpy module that the kernel modules see (fpemu.codec.fast.top_half, .fp32_table and .prefix_rne) is
swapped for a proxy that times every call by name, on one worker. In-place operators
(``a += b``) are ndarray methods, not numpy functions: they land in "the rest", with Python's
own time between the calls. The report gives ns per element of input for each call, the
kernel's time without the proxy, and the competitors' casts (``torch.set_num_threads(1)``):
how far a kernel made of whole-array NumPy passes stands from a compiled cast, pass by pass.

The line profile (``sys.settrace`` on the kernel functions of codec.fast.top_half, .fp32_table,
.prefix_rne and .float32_alike) gives the ns per element of every line that ran, in-place operators
included: these are the passes that remain. The floor: the cheapest pass NumPy has, one
integer narrowing copy of the input's bit patterns into a code array (``np.copyto`` of
uint32 into uint8, in cache-sized chunks), times the passes the kernel makes; a compiled cast
does the whole conversion in about one such pass.

Under stochastic rounding (``--rounding stochastic...``) the float_fields path and the random
numbers are profiled too, and the stochastic floor is printed: the format's default path, plus
the random numbers alone (SplitMix64's passes, :func:`fpemu.codec.rounding.random_top_bits` in
the path's chunks) and the carry alone (:func:`fpemu.codec.rounding.stochastic_carry`): what
stochastic rounding costs at the least when it is the default path with a rounding increment
from random bits, pass for pass.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fpemu  # noqa: E402
from bench_codec import best_seconds  # noqa: E402  (this folder is on the path: run as a script)
from bench_mx import torchao_seconds  # noqa: E402
from fpemu import mx  # noqa: E402
from fpemu.codec import chunks as codec_chunks  # noqa: E402
from fpemu.codec import rounding, scaled_blocks  # noqa: E402
from fpemu.codec.fast import float32_alike, float_fields, fp32_table, prefix_rne, top_half  # noqa: E402
from fpemu.mx import mx_quantization, mx_scales  # noqa: E402

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
try:
    import torch
except ImportError:
    torch = None

CASTS = {"bf16": "bfloat16", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "fp16": "float16"}


class TimedNumpy:
    """numpy, with every function call timed into ``totals[name]`` (seconds, calls)."""

    def __init__(self, totals: dict) -> None:
        self._totals = totals

    def __getattr__(self, name: str):
        attr = getattr(np, name)
        if not callable(attr) or isinstance(attr, type):
            return attr  # dtypes, constants, classes such as errstate

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                entry = self._totals[name]
                entry[0] += time.perf_counter() - start
                entry[1] += 1

        if isinstance(attr, np.ufunc):  # its methods (maximum.reduce ...) pass through, untimed
            for method in ("reduce", "accumulate", "reduceat", "outer", "at"):
                setattr(timed, method, getattr(attr, method))
        return timed


KERNEL_MODULES = (top_half, fp32_table, prefix_rne, float_fields, rounding, float32_alike)
TIMED_MODULES = KERNEL_MODULES[:5]  # (their numpy calls timed by name)
MX_MODULES = (mx_quantization, mx_scales, codec_chunks, scaled_blocks)  # (profiled with --mx)


def line_profile(fn) -> tuple[dict, int]:
    """({(function, line): seconds}, line events) of one call of fn, for every line of the
    kernel modules' functions that ran: the time from each line event to the next event in
    a kernel frame goes to that line (a call's own lines get the time spent inside it)."""
    files = {m.__file__ for m in KERNEL_MODULES + MX_MODULES}
    totals: dict = defaultdict(float)
    last = [None, 0.0, 0]  # line key, its start, line events

    def local(frame, event, arg):
        now = time.perf_counter()
        if last[0] is not None:
            totals[last[0]] += now - last[1]
        last[0] = (frame.f_code.co_name, frame.f_lineno) if event == "line" else None
        last[2] += event == "line"
        last[1] = time.perf_counter()
        return local

    def tracer(frame, event, arg):
        if frame.f_code.co_filename not in files:
            return None
        if last[0] is not None:  # the caller's line ends here
            totals[last[0]] += time.perf_counter() - last[1]
            last[0] = None
        return local

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return totals, last[2]


def floor_per_pass(n: int, repeat: int) -> float:
    """Seconds per element of NumPy's cheapest pass: uint32 patterns narrowed into uint8, in
    chunks of the top-half path's size (in cache), as the kernels walk their input."""
    u = np.arange(n, dtype=np.uint32)
    out = np.empty(n, np.uint8)
    step = codec_chunks.TOP_HALF_CHUNK

    def one_pass() -> None:
        for start in range(0, n, step):
            np.copyto(out[start:start + step], u[start:start + step], casting="unsafe")

    return best_seconds(one_pass, repeat) / n


def print_lines(totals: dict, n: int, top: int = 25) -> None:
    import linecache

    ns = 1e9 / n
    print(f"\n{'kernel line (function:line)':36s} {'ns/element':>10s}  source")
    sources = {}
    for m in KERNEL_MODULES + MX_MODULES:
        for name in dir(m):
            code = getattr(getattr(m, name), "__code__", None)
            if code is not None:
                sources[code.co_name] = code.co_filename
    for (name, line), seconds in sorted(totals.items(), key=lambda item: -item[1])[:top]:
        text = linecache.getline(sources.get(name, ""), line).strip()
        print(f"{name + ':' + str(line):36s} {seconds * ns:10.3f}  {text[:70]}")
    print(f"{'(all kernel lines)':36s} {sum(totals.values()) * ns:10.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", default="e4m3", help="any format name (ml_dtypes and torch beside: "
                        + ", ".join(sorted(CASTS)) + ")")
    parser.add_argument("--rounding", default=None, help="encode's rounding (default: the format's default path)")
    parser.add_argument("--sr-bits", type=int, default=None, help="P3109's N random bits (stochastic_a/b/c/odd)")
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64", "float16"])
    parser.add_argument("--mx", default=None, metavar="BLOCK_FORMAT",
                        help="profile mx.quantize into this block format instead (torchao's to_mx beside it)")
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal(args.n).astype(args.dtype)
    ns = 1e9 / args.n
    if args.mx:
        encode = lambda: mx.quantize(x, args.mx, workers=1)  # noqa: E731
        what = f"fpemu.mx.quantize({args.n} {args.dtype} randn, {args.mx!r}, workers=1)"
    else:
        options = {} if args.rounding is None else {"rounding": args.rounding}
        if fpemu.codec.is_stochastic(args.rounding or ""):  # (rng and sr_bits belong to those alone)
            options.update(sr_bits=args.sr_bits, rng=0)
        encode = lambda: fpemu.encode(x, args.format, workers=1, **options)  # noqa: E731
        what = f"fpemu.encode({args.n} {args.dtype} randn, {args.format!r}, workers=1, {options})"
    encode()  # tables and plans built outside the timing
    kernel = best_seconds(encode, args.repeat)

    totals: dict = defaultdict(lambda: [0.0, 0])
    proxy = TimedNumpy(totals)
    modules = TIMED_MODULES + (MX_MODULES if args.mx else ())
    saved = [m.np for m in modules]
    for m in modules:
        m.np = proxy
    try:
        start = time.perf_counter()
        encode()
        traced = time.perf_counter() - start
    finally:
        for m, original in zip(modules, saved):
            m.np = original

    print(f"{what}: {kernel * ns:.2f} ns/element "
          f"({args.n / kernel / 1e6:.0f} Melem/s); traced run {traced * ns:.2f} ns/element")
    print(f"{'numpy call':28s} {'calls':>7s} {'ns/element':>11s}")
    for name, (seconds, calls) in sorted(totals.items(), key=lambda item: -item[1][0]):
        print(f"{name:28s} {calls:7d} {seconds * ns:11.3f}")
    rest = traced - sum(seconds for seconds, _ in totals.values())
    print(f"{'the rest (in-place ops, Python)':28s} {'':7s} {rest * ns:11.3f}")
    calls = sum(count for _, count in totals.values())
    print(f"{calls} numpy calls for {args.n} elements; the timed calls average "
          f"{sum(s for s, _ in totals.values()) / max(calls, 1) * 1e6:.1f} us")

    lines, _ = line_profile(encode)
    print_lines(lines, args.n)
    per_pass = floor_per_pass(min(args.n, 1 << 22), args.repeat)
    passes = sum(seconds / args.n >= per_pass / 4 for seconds in lines.values())  # whole-array lines
    print(f"floor: one NumPy pass (uint32 -> uint8 copy, in cache) {per_pass * 1e9:.3f} ns/element; "
          f"{passes} kernel lines cost a quarter of that or more (whole-array passes): "
          f"{passes} x {per_pass * 1e9:.3f} = {passes * per_pass * 1e9:.2f} ns/element at the cheapest "
          f"pass's rate, against one pass for a compiled cast")

    if args.mx:
        _mx_parts(x, args.mx, args.repeat, ns)
        _torchao_beside(x, args.mx, args.repeat, kernel, ns)
        return
    if args.rounding is not None and args.rounding.startswith("stochastic"):
        _stochastic_floor(x, args.format, args.rounding, args.sr_bits, args.repeat, kernel, ns)
    if args.format not in CASTS:
        return
    if ml_dtypes is not None:
        dtype = getattr(ml_dtypes, CASTS[args.format], None) or np.dtype(CASTS[args.format])
        t = best_seconds(lambda: x.astype(dtype), args.repeat)
        print(f"ml_dtypes astype from {args.dtype}: {t * ns:.2f} ns/element ({args.n / t / 1e6:.0f} Melem/s)")
    if torch is not None:
        torch.set_num_threads(1)
        tensor, tdtype = torch.from_numpy(x.astype(np.float32)), getattr(torch, CASTS[args.format])
        t = best_seconds(lambda: tensor.to(tdtype), args.repeat)
        print(f"torch .to() from float32 on 1 thread: {t * ns:.2f} ns/element ({args.n / t / 1e6:.0f} Melem/s); "
              f"fpemu / torch = {t / kernel:.2f}")


def _stochastic_floor(x: np.ndarray, name: str, mode: str, sr_bits: int | None, repeat: int, kernel: float,
                     ns: float) -> None:
    """The least stochastic rounding costs as a rounding increment on the default path: the
    format's default encode, the random numbers of every position alone (the top bits the
    carry reads, in the float_fields path's chunks) and one carry over every element (on
    float32 fields' remainders), each timed alone."""
    fmt = fpemu.get_format(name)
    default = best_seconds(lambda: fpemu.encode(x, name, workers=1), repeat)
    step = float_fields._STOCHASTIC_CHUNK
    wide = 64 if x.dtype == np.float64 else 32
    uint = np.uint64 if wide == 64 else np.uint32
    shift = (52 if wide == 64 else 23) - fmt.mantissa_bits
    top = shift if sr_bits is None else sr_bits
    key = rounding.sr_key(0)

    def random_numbers() -> None:
        for start in range(0, x.size, step):
            rounding.random_top_bits(key, start, min(step, x.size - start), top, uint)

    rem = (np.arange(step, dtype=np.uint64) * np.uint64(2654435761) % np.uint64(1 << shift)).astype(uint)
    r = rounding.random_top_bits(key, 0, step, top, uint).copy()
    out = np.empty(step, uint)

    def carries() -> None:
        for _ in range(0, x.size, step):
            rounding.stochastic_carry(mode, rem, shift, sr_bits, r, out)

    t_random = best_seconds(random_numbers, repeat)
    t_carry = best_seconds(carries, repeat) if rounding.carry_serves(mode, shift, sr_bits, wide) else 0.0
    floor = default + t_random + t_carry
    print(f"stochastic floor: default path {default * ns:.2f} + random numbers {t_random * ns:.2f} "
          f"({top} top bits of SplitMix64) + carry {t_carry * ns:.2f} = {floor * ns:.2f} ns/element "
          f"({x.size / floor / 1e6:.0f} Melem/s, {default / floor:.2f}x the default path); "
          f"measured {kernel * ns:.2f} ns/element ({default / kernel:.2f}x the default path)")


def _mx_parts(x: np.ndarray, name: str, repeat: int, ns: float) -> None:
    """The parts of mx.quantize timed alone on the same values: the plain encode into the
    element format of the quotients the scaled encode rounds (each block divided by its scale
    beforehand, so that the encode meets the same few specials), and what the floor scale
    adds to it in the same pass (:func:`fpemu.codec.encode_scaled_by_block_max`): each
    block's largest top half (``last_axis_max`` over the uint16 magnitudes, piece by piece,
    as the kernel runs it). Their sum is what these passes cost at the least: the scaled
    encode is the plain one with each block's offset added. (Without the floor rule, or on
    pieces it declines, a pass of its own finds the amax: ``block amax and scale codes``.)"""
    bf = mx.get_block_format(name)
    if bf.is_int or bf.is_nvfp4 or x.dtype != np.float32:  # (E8M0 scales on float elements)
        return
    rows = x[: x.size // bf.block_size * bf.block_size].reshape(-1, bf.block_size)
    step = max(1, codec_chunks.MX_CHUNK // bf.block_size)
    chunks = [rows[i: i + step] for i in range(0, rows.shape[0], step)]

    def scales() -> None:
        for c in chunks:
            mx_scales.mx_scale_codes(mx_scales.block_amax_bits(c), c.dtype, bf, "floor", "nan")

    piece = codec_chunks.TOP_HALF_CHUNK // bf.block_size * bf.block_size
    tops = ((rows.reshape(-1).view(np.uint32) >> np.uint32(16)) & np.uint32(0x7FFF)).astype(np.uint16)

    def top_half_maxima() -> None:  # (the top halves themselves are the encode's: not timed)
        for start in range(0, tops.size, piece):
            codec_chunks.last_axis_max(tops[start: start + piece].reshape(-1, bf.block_size))

    codes = np.concatenate([mx_scales.mx_scale_codes(mx_scales.block_amax_bits(c), c.dtype, bf, "floor", "nan")
                            for c in chunks])
    quotients = (rows * mx_scales.pow2_from_e8m0(codes, np.float32, negate=True)[:, None]).reshape(-1)
    t_scales = best_seconds(scales, repeat)
    t_maxima = best_seconds(top_half_maxima, repeat)
    t_encode = best_seconds(lambda: fpemu.encode(quotients, bf.element, overflow="saturate", workers=1), repeat)
    total = t_maxima + t_encode
    print(f"the parts alone: encode of the quotients into {bf.element.name} {t_encode * ns:.2f} ns/element, "
          f"the blocks' largest top halves {t_maxima * ns:.2f} (the floor scale's amax, read off that encode's "
          f"pass): together {total * ns:.2f} ns/element ({x.size / total / 1e6:.0f} Melem/s), the least these "
          f"passes cost; a pass of its own for the amax (block amax and scale codes, the other scale rules) "
          f"{t_scales * ns:.2f}")


def _torchao_beside(x: np.ndarray, name: str, repeat: int, kernel: float, ns: float) -> None:
    """torchao's CPU cast of the same float32 values on one thread, where installed, timed in
    fresh processes of its own (:func:`bench_mx.torchao_seconds`: after fpemu's runs in this
    process it measures up to 3x slower)."""
    if x.dtype != np.float32:
        print("torchao's casts take float32: no peer")
        return
    t = torchao_seconds(name, x.size, 1, repeat)
    if t is None:
        print(f"torchao not installed, or no CPU cast of {name}: no peer")
        return
    print(f"torchao {'nvfp4_quantize' if name == 'nvfp4' else 'to_mx'} on 1 thread (fresh processes): "
          f"{t * ns:.2f} ns/element ({x.size / t / 1e6:.0f} Melem/s); fpemu / torchao = {t / kernel:.2f}")


if __name__ == "__main__":
    main()
