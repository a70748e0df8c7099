"""fpemu.like: each named convention reproduces that library's conversion, checked against the
library itself where it is installed (ml_dtypes, torch, gfloat), and against an exact model
of its published rule where it is not code we can run here (microxcaling, PTX cvt).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu import decode, encode, get_format, like, resolve_convention
from reference import ML_DTYPES_TYPES, oracle_type, ref_encode


def float32_inputs(seed: int = 0, n: int = 1 << 18) -> np.ndarray:
    """Every float16 value, random float32 bit patterns, NaNs with payloads, both signs."""
    all_half = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FA00001], np.uint32).view(np.float32)
    return np.concatenate([all_half, bits, nans])


def same_codes(got, want, x, what):
    got, want = np.asarray(got).astype(np.uint64), np.asarray(want).astype(np.uint64)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{what}: {bad.size} differ, e.g. x={x[bad[:4]]} got {got[bad[:4]]} want {want[bad[:4]]}"


# ---- ml_dtypes --------------------------------------------------------------------------------
ML = [n for n in ML_DTYPES_TYPES if n not in ("fp32", "fp16")]


@pytest.mark.parametrize("name", ML)
def test_ml_dtypes_float32_casts(name):
    pytest.importorskip("ml_dtypes")
    x = float32_inputs()
    with np.errstate(over="ignore", invalid="ignore"):  # (oracle_type skips a type the release lacks)
        want = x.astype(oracle_type(name)).view(np.uint8 if get_format(name).bits <= 8 else np.uint16)
    same_codes(encode(x, name, **like("ml_dtypes", name)), want, x, name)


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e8m0", "e2m1", "bf16"])
def test_ml_dtypes_float64_casts(name):
    """float64 straight in: like() of the installed release says whether it goes through
    float32 (0.5, 0.6: rounded twice) or not (0.7), and the codes agree either way."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(1)
    x = np.ldexp(rng.uniform(1, 2, 4096), rng.integers(-140, 130, 4096)) * rng.choice([-1, 1], 4096)
    # values just off a tie of the format, where rounding twice and once differ
    fmt = get_format(name)
    ties = decode(np.arange(fmt.max_code, dtype=fmt.code_dtype), name)
    mid = (ties[:-1] + ties[1:]) / 2
    mid = mid[np.isfinite(mid) & (mid > 0)]
    x = np.concatenate([x, mid * (1 + 2.0**-40), mid * (1 - 2.0**-40), -mid * (1 + 2.0**-40)])
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(getattr(ml_dtypes, ML_DTYPES_TYPES[name])).view(np.uint8 if fmt.bits <= 8 else np.uint16)
    same_codes(encode(x, name, **like("ml_dtypes", name)), want, x, name)


def test_ml_dtypes_plain_name_follows_the_installed_release():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    series = ".".join(ml_dtypes.__version__.split(".")[:2])
    known = fpemu.codec.conventions.CONVENTIONS["ml_dtypes"][1]
    want = series if series in known else list(known)[-1]
    assert fpemu.resolve_convention("ml_dtypes") == f"ml_dtypes-{want}"
    assert like("ml_dtypes", "e8m0") == like(f"ml_dtypes-{want}", "e8m0")


def test_ml_dtypes_e8m0_rules_by_release():
    x = [3.0, 0.75, 1.25 * 2.0**-127, 1.5 * 2.0**-127, 2.0**-127, 2.0**-130]
    # 0.5.1 to 0.6: ties up (3.0 -> 4.0, 0.75 -> 1.0), and (2^-127, 2^-126) up to 2^-126.
    assert encode(x, "e8m0", **like("ml_dtypes-0.6", "e8m0")).tolist() == [0x81, 0x7F, 0x01, 0x01, 0x00, 0x00]
    assert like("ml_dtypes-0.5", "e8m0") == like("ml_dtypes-0.6.0", "e8m0")
    # 0.7: plain ties away: 1.25 * 2^-127 is nearer 2^-127, 1.5 * 2^-127 a tie, away to 2^-126.
    assert encode(x, "e8m0", **like("ml_dtypes-0.7", "e8m0")).tolist() == [0x81, 0x7F, 0x00, 0x01, 0x00, 0x00]
    assert encode(x, "e8m0").tolist() == [0x80, 0x7E, 0x00, 0x00, 0x00, 0x00]  # fpemu's exact default
    # through float32 (0.6) and not (0.7): 3 - 2^-30 is below the tie 3 but rounds to it in float32
    y = np.array([3 * (1 - 2.0**-30)])
    assert encode(y, "e8m0", **like("ml_dtypes-0.6", "e8m0")).tolist() == [0x81]
    assert encode(y, "e8m0", **like("ml_dtypes-0.7", "e8m0")).tolist() == [0x80]
    # Its C++ saturating conversion gives the smallest value to zero and negatives, keeps NaN.
    got = encode([0.0, -1.0, np.inf, np.nan, 1e39], "e8m0", **like("ml_dtypes_saturate", "e8m0"))
    assert got.tolist() == [0x00, 0x00, 0xFF, 0xFF, 0xFE]


def test_ml_dtypes_releases_without_rules_are_refused_by_name():
    with pytest.raises(ValueError, match="0.5.0 rounds E8M0 ties to even"):
        like("ml_dtypes-0.5.0", "e8m0")
    with pytest.raises(ValueError, match="no rules for ml_dtypes 0.4; known releases: 0.5, 0.6, 0.7"):
        like("ml_dtypes-0.4", "bf16")
    with pytest.raises(ValueError, match="unknown convention 'ml_dtypes-new'; did you mean ml_dtypes"):
        like("ml_dtypes-new", "bf16")
    with pytest.raises(ValueError, match="specification"):
        like("p3109-4", "binary8p3se")


def test_a_plain_name_follows_the_installed_release(monkeypatch):
    from fpemu.codec import conventions

    for version, want in (("0.5.4", "ml_dtypes-0.5"), ("0.6.1", "ml_dtypes-0.6"), ("0.7.0", "ml_dtypes-0.7"),
                          ("0.9.0", "ml_dtypes-0.7"), (None, "ml_dtypes-0.7")):
        monkeypatch.setattr(conventions, "installed_version", lambda lib, v=version: v)
        assert conventions.resolve_convention("ml_dtypes") == want
        assert conventions.resolve_convention("ML_DTYPES") == want  # one rule for case
    monkeypatch.setattr(conventions, "installed_version", lambda lib: "0.5.0")
    with pytest.raises(ValueError, match="install ml_dtypes>=0.5.1"):
        like("ml_dtypes", "bf16")
    assert like("ml_dtypes-0.6", "bf16") == {"via": "fp32"}  # a named release needs no install


def test_ml_dtypes_truncation_overflows_even_toward_zero():
    # ConvertFrom<kSaturate=false, kTruncate=true>: 464 truncates to 448; 480 and up are NaN.
    got = encode([464.0, 479.0, 480.0, -1e6], "e4m3", **like("ml_dtypes_truncate", "e4m3"))
    assert got.tolist() == [0x7E, 0x7E, 0x7F, 0xFF]
    assert encode([65536.0], "e5m2", **like("ml_dtypes_truncate", "e5m2")).tolist() == [0x7C]
    assert encode([65536.0], "e5m2", rounding="rz").tolist() == [0x7B]  # IEEE 754 7.4


# ---- torch ------------------------------------------------------------------------------------
TORCH = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "e4m3fnuz": "float8_e4m3fnuz",
         "e5m2fnuz": "float8_e5m2fnuz", "fp16": "float16", "bf16": "bfloat16"}  # fmt: skip


@pytest.mark.parametrize("name", list(TORCH))
def test_torch_cpu_casts_from_float32(name):
    torch = pytest.importorskip("torch")
    x = float32_inputs(n=1 << 16)
    codes = torch.from_numpy(x).to(getattr(torch, TORCH[name]))
    bits = get_format(name).bits
    want = codes.view(torch.uint8 if bits <= 8 else torch.int16).numpy().view(np.uint8 if bits <= 8 else np.uint16)
    same_codes(encode(x, name, **like("torch", name)), want, x, name)


def test_torch_e8m0_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="drops the sign"):
        like("torch", "e8m0")


# ---- gfloat -----------------------------------------------------------------------------------
# gfloat's own expectations (graphcore-research/gfloat, test/test_encode.py and test_round.py):
# every NaN encodes to the all-ones code, an E4M3 value past 448 is NaN (0xFF), and round-to-odd
# overflows to Inf in Binary8p4se (224.1 -> +Inf) where IEEE's rule would give 224.
def test_gfloat_expectations():
    assert encode([np.nan, -np.nan], "e5m2", **like("gfloat", "e5m2")).tolist() == [0xFF, 0xFF]
    assert encode([np.nan], "fp16", **like("gfloat", "fp16")).tolist() == [0xFFFF]
    assert encode([480.0], "e4m3", **like("gfloat", "e4m3")).tolist() == [0xFF]
    odd = like("gfloat", "binary8p4se") | {"rounding": "odd"}
    assert decode(encode([224.1, -232.0], "binary8p4se", **odd), "binary8p4se").tolist() == [np.inf, -np.inf]
    assert encode([224.1], "binary8p4se", **{**like("gfloat_sat", "binary8p4se"), "rounding": "odd"}).tolist() == [0x7E]


GFLOAT_FORMATS = {"e4m3": "format_info_ocp_e4m3", "e5m2": "format_info_ocp_e5m2",
                  "fp16": "format_info_binary16", "bf16": "format_info_bfloat16",
                  "int8": "format_info_ocp_int8",  # (gfloat 0.5.2's binary64 round_float loses low bits)
                  "e8m0": "format_info_ocp_e8m0",
                  "binary8p3se": ("p3109", 8, 3), "binary8p4se": ("p3109", 8, 4),
                  "binary8p4ue": ("p3109", 8, 4, "Unsigned", "Extended"),
                  "binary8p3sf": ("p3109", 8, 3, "Signed", "Finite"),
                  "binary6p3uf": ("p3109", 6, 3, "Unsigned", "Finite"),
                  "e2m1": "format_info_ocp_e2m1", "e3m2": "format_info_ocp_e3m2"}  # fmt: skip


def gfloat_format(name: str):
    """gfloat's FormatInfo for one of fpemu's formats (gfloat imported by the caller)."""
    formats = pytest.importorskip("gfloat.formats")
    spec = GFLOAT_FORMATS[name]
    if isinstance(spec, str):
        return getattr(formats, spec)
    k, p, *rest = spec[1:]
    if not rest:
        return formats.format_info_p3109(k, p)
    types = pytest.importorskip("gfloat.types")
    return formats.format_info_p3109(k, p, getattr(types.Signedness, rest[0]), getattr(types.Domain, rest[1]))


@pytest.mark.parametrize("name", list(GFLOAT_FORMATS))
@pytest.mark.parametrize("mode", ["TiesToEven", "TiesToAway", "TowardZero", "TowardPositive", "TowardNegative"])
@pytest.mark.parametrize("sat", [False, True])
def test_gfloat_round_and_encode(name, mode, sat):
    gfloat = pytest.importorskip("gfloat")
    fi = gfloat_format(name)
    fmt = get_format(name)
    rng = np.random.default_rng(len(name))
    x = np.concatenate([np.ldexp(rng.uniform(-2, 2, 600), rng.integers(-30, 20, 600)),
                        [0.0, fmt.max, fmt.max * 1.01, fmt.max * 1.5, -fmt.max * 3, np.inf, -np.inf]])
    if not fmt.has_nan and not sat:  # gfloat raises where the format has nowhere to overflow to
        x = x[np.abs(x) <= fmt.max]
    if not fmt.signed:  # gfloat returns negative values into unsigned formats as they are
        x = x[x >= 0]
    if not fmt.subnormals:  # gfloat does not clamp E8M0's zero and tiny values to 2^-127
        x = x[np.abs(x) >= fmt.min_normal]
    if fmt.twos_complement:  # gfloat's INT8 reaches down to -2
        x = x[x >= fmt.lowest]
    rounding = {"TiesToEven": "rne", "TiesToAway": "rna", "TowardZero": "rz", "TowardPositive": "ru",
                "TowardNegative": "rd"}[mode]  # fmt: skip
    want = []
    for v in x:
        r = gfloat.round_float(fi, float(v), getattr(gfloat.RoundMode, mode), sat=sat)
        want.append(gfloat.encode_float(fi, r))
    opts = {**like("gfloat_sat" if sat else "gfloat", name), "rounding": rounding}
    same_codes(encode(x, name, **opts), want, x, f"{name} {mode} sat={sat}")


@pytest.mark.parametrize("mode", ["StochasticFastest", "StochasticFast", "Stochastic"])
def test_gfloat_stochastic_rounding_with_given_bits(mode):
    gfloat = pytest.importorskip("gfloat")
    if not hasattr(gfloat.RoundMode, "StochasticFastest"):
        pytest.skip("this gfloat has no P3109 stochastic modes")
    fi = pytest.importorskip("gfloat.formats").format_info_p3109(8, 3)
    n = 5
    rng = np.random.default_rng(3)
    x = np.ldexp(rng.uniform(-2, 2, 300), rng.integers(-18, 16, 300))
    r = rng.integers(0, 1 << n, 300)
    want = [gfloat.encode_float(fi, gfloat.round_float(fi, float(v), getattr(gfloat.RoundMode, mode), sat=True,
                                                       srbits=int(ri), srnumbits=n)) for v, ri in zip(x, r)]
    ours = {"StochasticFastest": "stochastic_a", "StochasticFast": "stochastic_b", "Stochastic": "stochastic_c"}[mode]
    same_codes(encode(x, "binary8p3se", rounding=ours, sr_bits=n, random_bits=r, overflow="saturate"), want, x, mode)


# ---- microxcaling and the PTX instructions: exact models of their published rules -----------------
def microxcaling_round(v: float, fmt_name: str) -> float:
    """microxcaling's _round_mantissa(round="nearest"): sign * floor(|v| / q + 1/2) * q on the
    element's grid (q the spacing at v, subnormal spacing below the smallest normal), then
    clamped to the largest normal (mx/elemwise_ops.py)."""
    fmt = get_format(fmt_name)
    a = abs(Fraction(v))
    e = max(math.floor(math.log2(a)) if a else fmt.emin, fmt.emin)
    q = Fraction(2) ** (e - fmt.mantissa_bits)
    r = min(math.floor(a / q + Fraction(1, 2)) * q, Fraction(fmt.max))
    return math.copysign(float(r), v)


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1"])
def test_microxcaling_elements(name):
    fmt = get_format(name)
    rng = np.random.default_rng(2)
    mags = np.ldexp(rng.integers(1, 64, 2000) / 16.0, rng.integers(fmt.emin - 3, fmt.emax + 2, 2000))
    x = mags * rng.choice([-1.0, 1.0], 2000)  # many exact ties
    want = [microxcaling_round(float(v), name) for v in x]
    got = fpemu.quantize(x, name, **like("microxcaling", name))
    assert got.tolist() == want


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e2m1", "e2m3", "e3m2", "fp16", "bf16"])
def test_ptx_cvt_satfinite(name):
    """cvt.rn/.rs.satfinite: RNE or StochasticA with the documented bits per value, clamped to
    +-MAX_NORM (Inf too), NaN -> the all-ones magnitude, +MAX_NORM in FP4/FP6."""
    fmt = get_format(name)
    rng = np.random.default_rng(4)
    x = np.concatenate([np.ldexp(rng.uniform(-2, 2, 400), rng.integers(fmt.emin - 3, min(fmt.emax + 3, 127), 400)),
                        [np.inf, -np.inf, np.nan, -np.nan]]).astype(np.float32)
    n = {"fp16": 13, "bf16": 16}.get(name, 8)
    r = rng.integers(0, 1 << n, x.size)
    for convention, mode in (("ptx_cvt_rn", "rne"), ("ptx_cvt_rs", "sra")):
        opts = like(convention, name)
        bits = {"random_bits": r} if convention == "ptx_cvt_rs" else {}
        want = []
        for v, ri in zip(x.tolist(), r.tolist()):
            if math.isnan(v):
                want.append(fmt.top_code if fmt.has_nan else fmt.max_code)
            else:
                want.append(ref_encode(v, fmt, rounding=mode, overflow="saturate", sr_bits=n, r=ri))
        same_codes(encode(x, name, **opts, **bits), want, x, convention)


def test_p3109_conformance_rounding():
    assert like("p3109", "binary8p3se") == {"overflow": "sat_none"}
    assert encode([1e6, 224.1], "binary8p4se", rounding="odd", **like("p3109", "binary8p4se")).tolist() == [0x7F, 0x7F]


def _every_convention_name() -> list[str]:
    """Every name like() takes: each convention with element rules, plain and with each release."""
    return fpemu.codec.names_with("elements")


@pytest.mark.parametrize("convention", _every_convention_name())
def test_like_never_returns_options_that_encode_refuses(convention):
    """Every convention x every named format: like() refuses with a reason, or gives options
    that encode and quantize accept (finite values, overflow, Inf; stochastic ones with bits)."""
    x = np.array([0.0, 1.3, -2.7, 1e-3, 1e6, -1e40, np.inf, -np.inf])
    taken = 0
    for name in fpemu.formats.format_names():
        for source in (np.float32, np.float64):
            try:
                opts = like(convention, name)
            except ValueError as e:
                assert str(e), (convention, name)
                continue
            extra = {"random_bits": np.arange(x.size) % 4} if "sr_bits" in opts else {}
            fmt = get_format(name)
            with np.errstate(over="ignore"):  # -1e40 is -Inf in float32
                y = (x if fmt.signed else np.abs(x)).astype(source)
            codes = encode(y, name, **opts, **extra)
            assert codes.shape == x.shape
            values = fpemu.quantize(y, name, **opts, **extra)
            assert values.shape == x.shape
            taken += 1
    assert taken > 0


# ---- one table for like() and mx.quantize(convention=) ------------------------------------------
def test_one_spelling_is_accepted_by_like_and_mx_quantize_alike():
    """transformer_engine-2.13 names one library release for its element casts and its MX
    blocks; the other spelling is refused by both, naming the right one."""
    from fpemu import mx

    x = np.linspace(-3, 3, 64, dtype=np.float32)
    assert like("transformer_engine-2.13", "e4m3") == {"overflow": "saturate"}
    q = mx.quantize(x, "mxfp8_e4m3", convention="transformer_engine-2.13")
    assert q.scale_rounding == "rceil"
    for wrong in ("transformer-engine-2.13", "Transformer-Engine-2.13"):
        with pytest.raises(ValueError, match="did you mean transformer_engine-2.13"):
            like(wrong, "e4m3")
        with pytest.raises(ValueError, match="did you mean transformer_engine-2.13"):
            mx.quantize(x, "mxfp8_e4m3", convention=wrong)


def test_a_plain_name_resolves_alike_for_elements_and_blocks(monkeypatch):
    """One resolution of a plain library name: the installed release, else the newest rules,
    among the releases that have rules for what is asked."""
    from fpemu import mx
    from fpemu.codec import conventions

    # (2.12's element casts were not read: before 2.13 the oldest element rules known apply)
    for version, blocks in (("2.10.1", "2.12"), ("2.13.0", "2.13"), ("2.18.0", "2.13"), (None, "2.13")):
        monkeypatch.setattr(conventions, "installed_version", lambda lib, v=version: v)
        assert resolve_convention("transformer_engine", "mx") == f"transformer_engine-{blocks}"
        assert resolve_convention("transformer_engine") == "transformer_engine-2.13"
    monkeypatch.setattr(conventions, "installed_version", lambda lib: "0.18.0")
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    a, b = mx.quantize(x, "mxfp4", convention="torchao"), mx.quantize(x, "mxfp4", convention="torchao-0.18")
    assert np.array_equal(a.codes, b.codes) and np.array_equal(a.scales, b.scales)
    assert mx.quantize(x, "nvfp4", convention="torchao").variant == "torchao"


def test_each_part_is_refused_where_a_release_has_no_rules_for_it():
    from fpemu import mx

    with pytest.raises(ValueError, match="'torchao' has no element conversion rules in fpemu"):
        like("torchao", "e4m3")
    with pytest.raises(ValueError, match="'ml_dtypes-0.7' has no MX block rules"):
        mx.quantize(np.ones(32), "mxfp8_e4m3", convention="ml_dtypes-0.7")
    with pytest.raises(ValueError, match="'torchao_triton' has no NVFP4 rules"):
        mx.quantize(np.ones(32), "nvfp4", convention="torchao_triton")
    # every name the table lists for a part is one that part accepts
    for part in ("elements", "mx", "nvfp4"):
        for name in fpemu.codec.names_with(part):
            assert resolve_convention(name, part).startswith(name.partition("-")[0])
