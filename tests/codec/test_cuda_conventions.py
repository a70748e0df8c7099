"""like("cuda-13.0", ...): CUDA 13.0's host conversions (cuda_fp8.hpp, cuda_fp6.hpp,
cuda_fp4.hpp, cuda_bf16.hpp, cuda_fp16.hpp), checked two ways:

* the reproducers of issue 40, by hand from the header's rule (each test names the header
  function whose rule it follows), so they run everywhere;
* NVIDIA's own code: a small C++ program that calls every intrinsic, compiled by nvcc against
  the headers (host code, no GPU), compared with fpemu on every 16-bit input, a structured
  sample of float32 and float64 (every exponent, the bits around each format's rounding
  point, specials) and, under ``-m slow``, every float32 pattern. Skipped where nvcc or the
  headers are absent.

``python tests/codec/test_cuda_conventions.py`` prints the table of docs/formats.md
("CUDA 13.0"), which ``test_the_docs_table_is_this_one`` keeps equal to :data:`ENCODES` and
:data:`DECODES`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from fpemu import decode, encode, like, quantize

CUDA_INCLUDE = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
HEADERS = ("cuda_fp8.h", "cuda_fp6.h", "cuda_fp4.h", "cuda_bf16.h", "cuda_fp16.h")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "formats.md"


# ---- the conversions ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Encode:
    """One CUDA conversion into ``fmt``: its C expression of ``x`` (a float, double,
    __half_raw or __nv_bfloat16_raw) and the like() choices that reproduce it."""

    call: str
    source: str  # float, double, half, bfloat16
    fmt: str
    choices: dict = field(default_factory=dict)

    @property
    def conversion(self):
        return like("cuda-13.0", self.fmt, source=self.source, **self.choices)

    def fpemu_call(self) -> str:
        args = "".join(f', {k}="{v}"' if isinstance(v, str) else f", {k}={v!r}" for k, v in self.choices.items())
        source = "" if self.source == "float" else f', source="{self.source}"'
        return f'like("cuda-13.0", "{self.fmt}"{source}{args})'


_FP8 = {"e4m3": "__NV_E4M3", "e5m2": "__NV_E5M2"}
_FP6 = {"e2m3": "__NV_E2M3", "e3m2": "__NV_E3M2"}
_SAT = {True: "__NV_SATFINITE", False: "__NV_NOSAT"}
_ROUND = {"nearest_even": "cudaRoundNearest", "toward_zero": "cudaRoundZero", "up": "cudaRoundPosInf"}
_RAW = {"float": "float", "double": "double", "half": "halfraw", "bfloat16": "bfloat16raw"}


def _encodes() -> list[Encode]:
    cases = []
    for source, raw in _RAW.items():
        for fmt, kind in _FP8.items():
            for sat in (True, False):
                cases.append(Encode(f"__nv_cvt_{raw}_to_fp8(x, {_SAT[sat]}, {kind})", source, fmt,
                                    {} if sat else {"saturate": False}))
        for fmt, kind in list(_FP6.items()) + [("e2m1", "__NV_E2M1")]:
            family = "fp4" if fmt == "e2m1" else "fp6"
            for rounding in ("nearest_even", "toward_zero"):
                cases.append(Encode(f"__nv_cvt_{raw}_to_{family}(x, {kind}, {_ROUND[rounding]})", source, fmt,
                                    {} if rounding == "nearest_even" else {"rounding": "rz"}))
    for source in ("float", "double", "bfloat16"):
        for sat in (True, False):
            for rounding in ("up", "toward_zero"):
                choices = ({} if sat else {"saturate": False}) | ({} if rounding == "up" else {"rounding": "rz"})
                cases.append(Encode(f"__nv_cvt_{_RAW[source]}_to_e8m0(x, {_SAT[sat]}, {_ROUND[rounding]})",
                                    source, "e8m0", choices))
    cases.append(Encode("__nv_fp8_e8m0(__half(x)).__x", "half", "e8m0"))
    for fmt, c in (("bf16", "bfloat16"), ("fp16", "half")):
        for suffix, rounding in (("rn", None), ("rz", "rz"), ("rd", "rd"), ("ru", "ru")):
            choices = {} if rounding is None else {"rounding": rounding}
            cases.append(Encode(f"__float2{c}_{suffix}(x)", "float", fmt, choices))
        cases.append(Encode(f"__double2{c}(x)", "double", fmt))
    return cases


ENCODES = _encodes()


@dataclass(frozen=True)
class Decode:
    """One CUDA conversion out of ``fmt``: its C expression of ``c`` (the code), the C type
    of its result (half_raw, bf16_raw, float, double) and the fpemu call that gives the
    same bits (the text for the docs, the function for the test)."""

    call: str
    fmt: str
    result: str
    fpemu: str
    run: Callable[[np.ndarray], np.ndarray]


def _decodes() -> list[Decode]:
    cases = []
    for fmt in ("e4m3", "e5m2"):
        kind = _FP8[fmt]
        cases.append(Decode(f"__nv_cvt_fp8_to_halfraw(c, {kind})", fmt, "half_raw",
                            f'encode(decode(c, "{fmt}"), "fp16", nan="ones_positive")',
                            lambda c, f=fmt: encode(decode(c, f), "fp16", nan="ones_positive")))
        cases.append(Decode(f"float(__nv_fp8_{fmt})", fmt, "float",
                            f'decode(c, "{fmt}", dtype=np.float32, nan_bits=0x7FFFFFFF)',
                            lambda c, f=fmt: decode(c, f, dtype=np.float32, nan_bits=0x7FFFFFFF)))
        cases.append(Decode(f"double(__nv_fp8_{fmt})", fmt, "double",
                            f'decode(c, "{fmt}", nan_bits=0x7FFFFFFFE0000000)',
                            lambda c, f=fmt: decode(c, f, nan_bits=0x7FFFFFFFE0000000)))
    for fmt, kind, family in (("e2m3", "__NV_E2M3", "fp6"), ("e3m2", "__NV_E3M2", "fp6"), ("e2m1", "__NV_E2M1", "fp4")):
        cases.append(Decode(f"__nv_cvt_{family}_to_halfraw(c, {kind})", fmt, "half_raw",
                            f'encode(decode(c, "{fmt}"), "fp16")', lambda c, f=fmt: encode(decode(c, f), "fp16")))
        cases.append(Decode(f"float(__nv_{family}_{fmt})", fmt, "float", f'decode(c, "{fmt}", dtype=np.float32)',
                            lambda c, f=fmt: decode(c, f, dtype=np.float32)))
    cases.append(Decode("__nv_cvt_e8m0_to_bf16raw(c)", "e8m0", "bf16_raw",
                        'encode(decode(c, "e8m0"), "bf16", nan="ones_positive")',
                        lambda c: encode(decode(c, "e8m0"), "bf16", nan="ones_positive")))
    cases.append(Decode("float(__nv_fp8_e8m0)", "e8m0", "float",
                        'decode(c, "e8m0", dtype=np.float32, nan_bits=0x7FFF0000)',
                        lambda c: decode(c, "e8m0", dtype=np.float32, nan_bits=0x7FFF0000)))
    cases.append(Decode("double(__nv_fp8_e8m0)", "e8m0", "double",
                        'decode(c, "e8m0", nan_bits=0x7FFFE00000000000)',
                        lambda c: decode(c, "e8m0", nan_bits=0x7FFFE00000000000)))
    return cases


DECODES = _decodes()


# ---- (a) the reproducers of issue 40, by hand from the headers' rules -------------------------
def cuda(x, fmt, **choices):
    """fpemu's codes of CUDA's conversion of x (a float32 or float64 array) into fmt."""
    x = np.asarray(x)
    source = {np.float32: "float", np.float64: "double", np.float16: "half"}[x.dtype.type]
    return encode(x, fmt, conversion=like("cuda-13.0", fmt, source=source, **choices)).tolist()


def test_e8m0_converts_the_magnitude():
    # cuda_fp8.hpp __nv_cvt_float_to_e8m0 -> __nv_cvt_bfloat16raw_to_e8m0: the code is
    # (unsigned char)(bf16 >> 7), the exponent field without the sign ("the input's absolute
    # value is rounded"); cudaRoundPosInf rounds |x| up.
    assert cuda(np.float32([-4.0, 4.0, -5.0, -0.0]), "e8m0", rounding="rz") == [0x81, 0x81, 0x81, 0x00]
    assert cuda(np.float32([-4.0, -5.0]), "e8m0", rounding="up") == [0x81, 0x82]
    assert cuda(np.float64([-4.0, -5.0]), "e8m0", rounding="up", saturate=False) == [0x81, 0x82]


def test_e8m0_zero_is_the_smallest_code_without_saturation():
    # __nv_cvt_bfloat16raw_to_e8m0: exponent field 0 -> 0x00, and cudaRoundPosInf rounds up only
    # where |x| > 2**-127 (0x0040): zero and everything down to it stay 0x00; __NV_NOSAT
    # keeps 0xFF only for what rounds past 2**127 (bf16 0x7F01 -> 0xFE + 1).
    tiny = np.uint32([0x00000001]).view(np.float32)[0]
    x = np.float32([0.0, -0.0, tiny, 2.0**-127, np.float32(2.0**-127) * np.float32(1.5)])
    assert cuda(x, "e8m0", rounding="up", saturate=False) == [0x00, 0x00, 0x00, 0x00, 0x01]
    big = np.uint32([0x7F000001, 0x7F000000]).view(np.float32)
    assert cuda(big, "e8m0", rounding="up", saturate=False) == [0xFF, 0xFE]
    assert cuda(big, "e8m0", rounding="up") == [0xFE, 0xFE]  # __NV_SATFINITE: 0xFF -> 0xFE
    assert cuda(np.float32([np.inf, np.nan]), "e8m0", rounding="rz") == [0xFE, 0xFF]  # NaN is never saturated
    assert cuda(np.float32([np.inf]), "e8m0", rounding="rz", saturate=False) == [0xFF]


def test_e4m3_nosat_nan_is_positive_but_overflow_keeps_the_sign():
    # __nv_cvt_float_to_fp8: a NaN becomes 0x7FFFFFFF ("Canonical NaN") before
    # __nv_cvt_double_to_fp8, which ORs the sign into 0x7F; an overflow past 464 under
    # __NV_NOSAT is 0x7F | sign.
    neg_nan = np.uint32([0xFFC00000]).view(np.float32)[0]
    x = np.float32([neg_nan, np.nan, -500.0, 500.0, -np.inf, 464.0, -465.0])
    assert cuda(x, "e4m3", saturate=False) == [0x7F, 0x7F, 0xFF, 0x7F, 0xFF, 0x7E, 0xFF]
    assert cuda(x, "e4m3") == [0x7F, 0x7F, 0xFE, 0x7E, 0xFE, 0x7E, 0xFE]
    # from half: __internal_halfraw_to_float discards a NaN's sign first, the same code
    assert cuda(np.uint16([0xFE00, 0xFC00]).view(np.float16), "e4m3", saturate=False) == [0x7F, 0xFF]
    # from double the sign stays (__nv_cvt_double_to_fp8: res = 0x7F; res |= sign)
    assert cuda(np.float64([-np.nan, -500.0]), "e4m3", saturate=False) == [0xFF, 0xFF]


def test_e8m0_decode_widens_bf16_nan():
    # __internal_e8m0_to_bf16: 0xFF -> 0x7FFF, 0x00 -> 0x0040 (2**-127); float() shifts it up
    bits = decode([0xFF, 0x00, 0x7F], "e8m0", dtype=np.float32, nan_bits=0x7FFF0000).view(np.uint32)
    assert bits.tolist() == [0x7FFF0000, 0x00400000, 0x3F800000]


def test_e5m2_from_double_keeps_the_quiet_payload():
    # __nv_cvt_double_to_fp8, __NV_E5M2: "NaN --> QNaN": 0x7E | (top 2 mantissa bits & 3) | sign
    nans = np.uint64([0x7FF0000000000001, 0xFFF4000000000000, 0x7FFC000000000000]).view(np.float64)
    assert cuda(nans, "e5m2") == [0x7E, 0xFF, 0x7F]
    float_nans = np.uint32([0x7F800001, 0xFFA00000, 0x7FE00000]).view(np.float32)
    assert cuda(float_nans, "e5m2") == [0x7F, 0x7F, 0x7F]  # float: made 0x7FFFFFFF first


def test_fp4_fp6_nan_is_positive_max_and_rz_truncates():
    # __nv_cvt_double_to_fp4/_fp6: "NaN converts to positive FP4_MAXNORM"; overflow saturates
    # in both roundings; cudaRoundZero drops the rounded-off bits.
    x = np.float32([-np.nan, -np.inf, 5.9, -0.26])
    assert cuda(x, "e2m1") == [0x7, 0xF, 0x7, 0x9]
    assert cuda(x, "e2m1", rounding="rz") == [0x7, 0xF, 0x6, 0x8]
    assert cuda(np.float32([7.9, -30.0]), "e3m2", rounding="rz") == [0x17, 0x3F]  # 7.9 -> 7 = 1.11b * 2**2


def test_bf16_and_half_nan_is_0x7fff():
    # __internal_float2bfloat16 / __internal_float2half: any NaN -> 0x7FFF; _rz of a large
    # float is the largest finite value, _ru past it is Inf.
    neg_nan = np.uint32([0xFFC00001]).view(np.float32)[0]
    assert cuda(np.float32([neg_nan, 1e38]), "bf16", rounding="rz") == [0x7FFF, 0x7E96]
    assert cuda(np.float32([neg_nan, 1e6, 65505.0]), "fp16", rounding="rz") == [0x7FFF, 0x7BFF, 0x7BFF]
    assert cuda(np.float32([65505.0]), "fp16", rounding="ru") == [0x7C00]
    assert cuda(np.float64([-np.nan]), "fp16") == [0x7FFF]


def test_exact_input_and_quantize_take_the_same_rules():
    # The exact kernel (strings, Fractions) and quantize apply the options as float input does.
    e8m0 = like("cuda-13.0", "e8m0", saturate=False)
    assert encode(["-4", "0", "-0", "-5", "1e-50", "-1e-50"], "e8m0", conversion=e8m0).tolist() == [
        0x81, 0x00, 0x00, 0x82, 0x00, 0x00]
    assert quantize(np.float32([-4.0, -5.0, 0.0]), "e8m0", conversion=e8m0).tolist() == [4.0, 8.0, 2.0**-127]
    e4m3 = like("cuda-13.0", "e4m3", saturate=False)
    assert encode(["nan", "-nan", "-500"], "e4m3", conversion=e4m3).tolist() == [0x7F, 0x7F, 0xFF]


def test_vector_files_keep_no_code():
    from fpemu.vectors import cast_vectors
    from fpemu.vectors.files import verify

    v = cast_vectors("e8m0", "edge", conversion=like("cuda-13.0", "e8m0", saturate=False))
    assert v["meta"]["no_code"] == "magnitude"
    assert verify(v) == (v["meta"]["n"], v["meta"]["n"])


def test_choices_cuda_does_not_offer_are_refused():
    assert like("cuda", "e4m3", saturate=False) == like("cuda-13.0", "e4m3", source="float", saturate=False)
    assert like("cuda-13.0", "e4m3", source=np.float64) == like("cuda-13.0", "e4m3", source="double")
    with pytest.raises(ValueError, match="rounds float to e4m3 by nearest_even, not 'rz'"):
        like("cuda-13.0", "e4m3", rounding="rz")
    with pytest.raises(ValueError, match="e8m0 by up, toward_zero"):
        like("cuda-13.0", "e8m0", rounding="rne")
    with pytest.raises(ValueError, match="take no __nv_saturation_t"):
        like("cuda-13.0", "e2m1", saturate=False)
    with pytest.raises(ValueError, match="converts float, double to fp16, not 'half'"):
        like("cuda-13.0", "fp16", source="half")
    with pytest.raises(ValueError, match="no host conversion to e4m3fnuz"):
        like("cuda-13.0", "e4m3fnuz")
    with pytest.raises(TypeError, match="unknown choice 'saturate': it takes none"):
        like("ml_dtypes-0.7", "e4m3", saturate=True)
    with pytest.raises(ValueError, match="no_code applies to formats without negative numbers"):
        encode([1.0], "e4m3", no_code="magnitude")
    with pytest.raises(ValueError, match="not a NaN of float32"):
        decode([0xFF], "e8m0", dtype=np.float32, nan_bits=0x7F800000)


# ---- (b) against NVIDIA's headers, compiled by nvcc --------------------------------------------
_C_INPUT = {"float": "float", "double": "double", "half": "unsigned short", "bfloat16": "unsigned short"}
_C_RESULT = {"half_raw": "unsigned short", "bf16_raw": "unsigned short", "float": "unsigned int",
             "double": "unsigned long long"}
_NP_RESULT = {"half_raw": np.uint16, "bf16_raw": np.uint16, "float": np.uint32, "double": np.uint64}


def _encode_body(case: Encode) -> str:
    if case.source == "half":
        take = "__half_raw x; x.x = b;"
    elif case.source == "bfloat16":
        take = "__nv_bfloat16_raw x; x.x = b;"
    else:
        take = "const auto x = b;"
    if case.fmt in ("bf16", "fp16"):
        raw = "__nv_bfloat16_raw" if case.fmt == "bf16" else "__half_raw"
        return f"{take} return (unsigned short)static_cast<{raw}>({case.call}).x;"
    return f"{take} return (unsigned char)({case.call});"


def _decode_body(case: Decode) -> str:
    if case.result in ("half_raw", "bf16_raw"):
        return f"return (unsigned short)({case.call}).x;"
    kind, ctype = case.call.split("(", 1)[0], case.result
    struct = case.call[len(kind) + 1:-1]  # float(__nv_fp8_e8m0): the struct holding code c
    return (f"{struct} v; v.__x = c; {ctype} r = {kind}(v); {_C_RESULT[case.result]} u; "
            "memcpy(&u, &r, sizeof r); return u;")


def harness_source() -> str:
    """The C++ program: ``prog NAME IN OUT`` applies conversion NAME (e0.., d0..) to the
    raw array in file IN and writes the raw results to OUT."""
    lines = ["#include <cuda_fp8.h>", "#include <cuda_fp6.h>", "#include <cuda_fp4.h>",
             "#include <cuda_bf16.h>", "#include <cuda_fp16.h>",
             "#include <cstdio>", "#include <cstring>", "#include <vector>",
             "template <class In, class Out, class F> static int run(const char *in, const char *out, F f) {",
             "  FILE *fi = fopen(in, \"rb\"); if (!fi) return 3; fseek(fi, 0, SEEK_END);",
             "  size_t n = ftell(fi) / sizeof(In); fseek(fi, 0, SEEK_SET);",
             "  std::vector<In> x(n); std::vector<Out> y(n);",
             "  if (fread(x.data(), sizeof(In), n, fi) != n) return 4; fclose(fi);",
             "  for (size_t i = 0; i < n; ++i) y[i] = f(x[i]);",
             "  FILE *fo = fopen(out, \"wb\"); if (!fo) return 5;",
             "  fwrite(y.data(), sizeof(Out), n, fo); fclose(fo); return 0;", "}",
             "int main(int argc, char **argv) {", "  if (argc != 4) return 2;", "  const char *n = argv[1];"]
    for i, case in enumerate(ENCODES):
        cin = _C_INPUT[case.source]
        out = "unsigned short" if case.fmt in ("bf16", "fp16") else "unsigned char"
        lines.append(f'  if (!strcmp(n, "e{i}")) return run<{cin}, {out}>(argv[2], argv[3], '
                     f"[]({cin} b) -> {out} {{ {_encode_body(case)} }});")
    for i, case in enumerate(DECODES):
        out = _C_RESULT[case.result]
        lines.append(f'  if (!strcmp(n, "d{i}")) return run<unsigned char, {out}>(argv[2], argv[3], '
                     f"[](unsigned char c) -> {out} {{ {_decode_body(case)} }});")
    lines += ["  return 1;", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    nvcc = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if Path("/usr/local/bin/nvcc").exists() else None)
    if nvcc is None or not all((CUDA_INCLUDE / h).exists() for h in HEADERS):
        pytest.skip("needs nvcc and CUDA's cuda_fp*.h headers")
    folder = tmp_path_factory.mktemp("cuda13")
    (folder / "conversions.cu").write_text(harness_source())
    command = [nvcc, "-O2", "-std=c++17", "-o", str(folder / "conversions"), str(folder / "conversions.cu")]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode:
        pytest.fail(f"nvcc failed:\n{built.stderr[-3000:]}")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    if "release 13.0" not in version:
        pytest.skip(f"the rules are CUDA 13.0's; this nvcc is {version.strip().splitlines()[-1]}")

    def run(name: str, x: np.ndarray, result: type) -> np.ndarray:
        src, dst = folder / f"{name}.in", folder / f"{name}.out"
        np.ascontiguousarray(x).tofile(src)
        done = subprocess.run([str(folder / "conversions"), name, str(src), str(dst)])
        assert done.returncode == 0, f"{name}: the harness exited {done.returncode}"
        return np.fromfile(dst, dtype=result)

    return run


def float32_sample() -> np.ndarray:
    """Structured float32 patterns: both signs x every exponent x every value of the top 11
    fraction bits (the rounding point of every target format: bf16 keeps 7, fp16 10), each
    with one of six low parts (0, 1, all ones, the half of the bits below, off by one either
    way: ties, sticky bits), then 2**16 random patterns and NaNs with payloads."""
    sign = np.arange(2, dtype=np.uint32)[:, None, None] << np.uint32(31)
    exponent = np.arange(256, dtype=np.uint32)[None, :, None] << np.uint32(23)
    top = np.arange(2048, dtype=np.uint32)[None, None, :] << np.uint32(12)
    lows = np.uint32([0, 1, 0x7FF, 0x800, 0x801, 0xFFF])
    pick = (np.arange(2048)[None, None, :] + np.arange(256)[None, :, None] + np.arange(2)[:, None, None]) % 6
    grid = (sign | exponent | top | lows[pick]).reshape(-1)
    rng = np.random.default_rng(40)
    random = rng.integers(0, 1 << 32, size=1 << 16, dtype=np.uint64).astype(np.uint32)
    nans = np.uint32([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FA00000])
    return np.concatenate([grid, random, nans]).view(np.float32)


def float64_sample() -> np.ndarray:
    """Structured float64 patterns: both signs x every exponent x fractions around the
    rounding point of every target (0 to 23 kept bits: E8M0 to float32): the half, the half
    plus or minus one, with the last kept bit set, and random fractions; NaNs with payloads."""
    fractions = [0, 1, (1 << 52) - 1]
    for kept in (0, 1, 2, 3, 7, 10, 23):
        half = 1 << (51 - kept)
        last = (half << 1) if kept else 0
        fractions += [half, half + 1, half - 1, half | last, half | last | 1, last, last | (half - 1)]
    rng = np.random.default_rng(41)
    fractions += rng.integers(0, 1 << 52, size=24, dtype=np.uint64).tolist()
    frac = np.array(sorted(set(fractions)), dtype=np.uint64)
    sign = np.arange(2, dtype=np.uint64)[:, None, None] << np.uint64(63)
    exponent = np.arange(2048, dtype=np.uint64)[None, :, None] << np.uint64(52)
    grid = (sign | exponent | frac[None, None, :]).reshape(-1)
    nans = np.uint64([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF4000000000000,
                      0x7FFC000000000000, 0x7FF2000000000000])
    return np.concatenate([grid, nans]).view(np.float64)


def inputs(source: str) -> np.ndarray:
    """The raw inputs of a source type, as the harness reads them."""
    if source == "float":
        return float32_sample()
    if source == "double":
        return float64_sample()
    return np.arange(1 << 16, dtype=np.uint16)  # half, bfloat16: every pattern


def fpemu_codes(case: Encode, raw: np.ndarray) -> np.ndarray:
    if case.source == "half":
        x = raw.view(np.float16)
    elif case.source == "bfloat16":
        x = (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)  # exact, NaN payloads too
    else:
        x = raw
    return encode(x, case.fmt, conversion=case.conversion)


def mismatches(got: np.ndarray, want: np.ndarray, raw: np.ndarray) -> str:
    bad = np.flatnonzero(got.astype(np.uint64) != want.astype(np.uint64))
    examples = ", ".join(f"{int(raw.view(f'u{raw.itemsize}')[i]):#x}: fpemu {int(got[i]):#x} CUDA {int(want[i]):#x}"
                         for i in bad[:4])
    return f"{bad.size} of {raw.size} differ ({examples})" if bad.size else ""


@pytest.mark.parametrize("index", range(len(ENCODES)), ids=[c.call for c in ENCODES])
def test_encode_matches_cuda(harness, index):
    case = ENCODES[index]
    raw = inputs(case.source)
    want = harness(f"e{index}", raw, np.uint16 if case.fmt in ("bf16", "fp16") else np.uint8)
    problem = mismatches(fpemu_codes(case, raw), want, raw)
    assert not problem, f"{case.call}: {problem}"


@pytest.mark.parametrize("index", range(len(DECODES)), ids=[c.call for c in DECODES])
def test_decode_matches_cuda(harness, index):
    case = DECODES[index]
    codes = np.arange(256, dtype=np.uint8)
    codes = codes[codes < (1 << {"e2m3": 6, "e3m2": 6, "e2m1": 4}.get(case.fmt, 8))]
    want = harness(f"d{index}", codes, _NP_RESULT[case.result])
    got = np.asarray(case.run(codes)).view(_NP_RESULT[case.result])
    assert not mismatches(got, want, codes), f"{case.call}: {mismatches(got, want, codes)}"


FLOAT_CASES = [i for i, c in enumerate(ENCODES) if c.source == "float"]


@pytest.mark.slow
@pytest.mark.parametrize("index", FLOAT_CASES, ids=[ENCODES[i].call for i in FLOAT_CASES])
def test_encode_matches_cuda_on_every_float32(harness, index):
    """All 2**32 float32 patterns, in chunks of 2**24."""
    case = ENCODES[index]
    result = np.uint16 if case.fmt in ("bf16", "fp16") else np.uint8
    step = 1 << 24
    compared = 0
    for start in range(0, 1 << 32, step):
        raw = np.arange(start, start + step, dtype=np.uint32).view(np.float32)
        want = harness(f"e{index}", raw, result)
        problem = mismatches(fpemu_codes(case, raw), want, raw)
        assert not problem, f"{case.call}, patterns from {start:#x}: {problem}"
        compared += raw.size
    assert compared == 1 << 32


# ---- (c) the docs table -------------------------------------------------------------------------
TABLE_START = "<!-- cuda-13.0 table: generated by tests/codec/test_cuda_conventions.py; do not edit -->"
TABLE_END = "<!-- end of the cuda-13.0 table -->"


def docs_table() -> str:
    """The markdown table of every conversion the nvcc test compares, with its inputs."""
    sizes = {"float": float32_sample().size, "double": float64_sample().size, "half": 1 << 16, "bfloat16": 1 << 16}
    rows = ["| CUDA 13.0 call | fpemu | inputs compared (default run) |", "|---|---|---|"]
    for case in ENCODES:
        every = " (every pattern)" if case.source in ("half", "bfloat16") else ""
        slow = "; every float32 with `-m slow`" if case.source == "float" else ""
        rows.append(f"| `{case.call}` | `encode(x, \"{case.fmt}\", conversion={case.fpemu_call()})` "
                    f"| {sizes[case.source]:,} {case.source}{every}{slow} |")
    for case in DECODES:
        n = 1 << {"e2m3": 6, "e3m2": 6, "e2m1": 4}.get(case.fmt, 8)
        rows.append(f"| `{case.call}` | `{case.fpemu}` | every code ({n}) |")
    return "\n".join([TABLE_START] + rows + [TABLE_END])


def test_the_docs_table_is_this_one():
    text = DOCS.read_text()
    assert TABLE_START in text and TABLE_END in text, "docs/formats.md lacks the cuda-13.0 table"
    start, end = text.index(TABLE_START), text.index(TABLE_END) + len(TABLE_END)
    assert text[start:end] == docs_table(), "regenerate it: python tests/codec/test_cuda_conventions.py"


if __name__ == "__main__":
    print(docs_table())
