"""docs/tutorial.md shows exactly the figures scripts/gen_tutorial_figures.py draws, and the
script draws them (its examples run as doctests with the other pages); the numbers its prose
states, and the data of its ML lessons' figures (scripts/tutorial_lessons.py), held to exact
Fraction arithmetic."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import fpemu
from fpemu.teach.plots import check_plot_request
import script_helpers

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"


def load(name: str):
    return script_helpers.load_script(f"scripts/{name}.py")  # (registered: gen_tutorial_figures imports tutorial_lessons by name)


def load_script():
    return load("gen_tutorial_figures")


@pytest.fixture(scope="module")
def lessons():
    return load("tutorial_lessons")


# ---- the figures ------------------------------------------------------------------------------
def all_figure_names(script) -> list[str]:
    return [name for name, *_ in script.FIGURES] + [name for name, *_ in script.LESSON_FIGURES]


def test_the_tutorial_shows_the_scripts_figures_and_no_others():
    import re

    shown = re.findall(r"\]\(figures/([^)]+\.png)\)", TUTORIAL.read_text())
    made = all_figure_names(load_script())
    assert sorted(shown) == sorted(made) and len(shown) == len(set(shown))
    for name in made:
        data = (ROOT / "docs" / "figures" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_every_figure_is_a_plot_fpemu_can_draw(lessons):
    script = load_script()
    for name, formats, kind, caption in script.FIGURES:
        assert check_plot_request(list(formats), kind) and caption and name.startswith("tutorial_")
    for name, data_name, draw_name, panels, quick, caption in script.LESSON_FIGURES:
        assert callable(getattr(lessons, data_name)) and callable(getattr(lessons, draw_name))
        assert name.startswith("tutorial_") and panels >= 1 and caption


def test_the_script_draws_them(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    script = load_script()
    assert script.main(["--check", "--out", str(tmp_path)]) == 0 and not list(tmp_path.iterdir())
    listed = capsys.readouterr().out
    assert "fpemu plot e4m3 e5m2 --kind spacing" in listed and "block_amax_data -> draw_block_amax" in listed
    two = ["tutorial_fp8_fp4_line.png", "tutorial_block_amax.png"]  # one of each kind
    assert script.main(["--quick", "--out", str(tmp_path), "--only", *two]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(two)
    with pytest.raises(SystemExit):
        script.main(["--only", "nope.png", "--out", str(tmp_path)])


def test_the_lesson_figures_keep_their_words_inside(lessons):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name, data_name, draw_name, panels, quick, _ in load_script().LESSON_FIGURES:
        fig, axes = plt.subplots(panels, 1, figsize=(10, 3.4 * panels + 0.4), layout="constrained", squeeze=False)
        try:
            getattr(lessons, draw_name)(axes[:, 0] if panels > 1 else axes[0, 0], getattr(lessons, data_name)(**quick))
            fig.canvas.draw()
            renderer, frame = fig.canvas.get_renderer(), fig.bbox
            for ax in axes[:, 0]:
                for artist in (ax.title, ax.get_legend(), ax.xaxis.label, ax.yaxis.label):
                    if hasattr(artist, "get_text") and not artist.get_text():
                        continue  # an empty label has no place
                    box = artist.get_window_extent(renderer)
                    assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, name
        finally:
            plt.close(fig)


@pytest.mark.slow
def test_the_script_draws_all_of_them(tmp_path):
    pytest.importorskip("matplotlib")
    script = load_script()
    assert script.main(["--quick", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(all_figure_names(script))


# ---- sections 1 to 6: the prose's numbers, by exact arithmetic -----------------------------------
def test_fp32_neighbours_of_one_and_of_a_tenth():
    below, above = np.nextafter(np.float32(1), np.float32(0)), np.nextafter(np.float32(1), np.float32(2))
    assert (1 - Fraction(float(below)), Fraction(float(above)) - 1) == (Fraction(1, 2**24), Fraction(1, 2**23))
    lo, hi = (np.array([0x3DCCCCCC, 0x3DCCCCCD], np.uint32)).view(np.float32)
    assert (str(Decimal(float(lo))), str(Decimal(float(hi)))) == ("0.0999999940395355224609375",
                                                                  "0.100000001490116119384765625")
    assert abs(Fraction(float(hi)) - Fraction("0.1")) < abs(Fraction("0.1") - Fraction(float(lo)))
    assert "0.0999999940395355224609375 and 0.100000001490116119384765625" in " ".join(TUTORIAL.read_text().split())


def test_tf32_normal_range_is_fp32s_its_subnormals_stop_at_2_to_the_minus_136():
    assert Fraction(2) ** -126 * Fraction(1, 2**10) == Fraction(1, 2**136)
    assert fpemu.get_format("tf32").min_subnormal == 2.0**-136 and fpemu.get_format("tf32").min_normal == 2.0**-126


def test_bf16_rounds_70000_and_truncation_would_not():
    step = Fraction(2**16, 2**7)  # BF16's step in [2**16, 2**17)
    steps = Fraction(70000) / step
    assert (round(steps) * step, int(steps) * step) == (70144, 69632)
    assert float(fpemu.quantize(70000.0, "bf16")) == 70144.0


@pytest.mark.parametrize("name, attained", [("fp16", Fraction(1, 2049)), ("bf16", Fraction(1, 257)),
                                            ("e4m3", Fraction(1, 17)), ("e5m2", Fraction(1, 9))])
def test_the_attained_relative_error_is_below_the_flat_bound(name, attained):
    fmt = fpemu.get_format(name)
    u = Fraction(1, 2 ** (fmt.mantissa_bits + 1))
    assert attained == u / (1 + u) < u
    mid = 1 + u  # the midpoint of the first gap above 1: a tie, to even (1)
    q = Fraction(float(fpemu.quantize(float(mid), name)))
    assert q == 1 and abs(q - mid) / mid == attained


def test_e4m3_underflow_at_or_below_half_the_smallest_subnormal():
    half = Fraction(1, 2**10)
    assert fpemu.quantize([float(half)], "e4m3").tolist() == [0.0]
    assert fpemu.quantize([float(half + Fraction(1, 2**20))], "e4m3").tolist() == [2.0**-9]


def test_the_mxfp4_block_of_section_6():
    x = [0.82, -1.37, 0.051, 2.9, -0.44, 12.5, 0.0013, -2.2]
    scale = Fraction(2) ** (3 - 2)  # floor(log2 12.5) = 3, minus E2M1's emax 2
    smallest = Fraction(1, 2) * scale
    flushed = [v for v in x if abs(Fraction(v)) <= smallest / 2]
    assert flushed == [0.051, -0.44, 0.0013]
    back = fpemu.mx.quantize(x, "mxfp4").dequantize(np.float64)
    assert [float(v) for v, b in zip(x, back) if b == 0] == flushed and np.signbit(back[4])


# ---- sections 7 to 12: the lessons' data -----------------------------------------------------
def test_fp8_scaling_keeps_what_the_formats_window_holds(lessons):
    data = lessons.fp8_scaling_data(4096)
    rows = {(r["tensor"], r["format"]): r for r in data["rows"]}
    for (tensor, fmt), r in rows.items():
        x = data["tensors"][tensor]
        f = fpemu.get_format(fmt)
        assert r["scale"] == float(np.float32(f.max) / np.abs(x).max())
        # flushed: |x * scale| (the float32 product) at or below half the smallest subnormal, a
        # power of two: comparing two floats is exact
        half = float(Fraction(f.min_subnormal) / 2)
        assert r["scaled_flushed"] == np.mean(np.abs(x * np.float32(r["scale"])) <= half)
        assert r["plain_flushed"] == np.mean(np.abs(x) <= half)
    assert (rows["activations", "e4m3"]["plain_flushed"], rows["gradients", "e5m2"]["plain_flushed"]) == (
        0.068603515625, 0.886962890625)
    assert rows["gradients", "e5m2"]["scaled_flushed"] == 0 and rows["gradients", "e4m3"]["scaled_flushed"] > 0.01


def test_loss_scaling_worked_example_and_figure(lessons):
    g, s = Fraction(1, 2**26), Fraction(2**16)
    assert g <= Fraction(1, 2**24) / 2 and g * s == Fraction(1, 2**10) >= Fraction(1, 2**14)
    data = lessons.loss_scaling_data()
    grads = data["gradients"]
    lost = np.mean(np.abs(grads) <= float(Fraction(1, 2**25)))  # floats compare exactly
    assert data["lost_plain"] == lost and round(100 * lost) == 68 and data["lost_scaled"] == 0
    normal = np.abs(grads) * 2.0**16 >= 2.0**-14
    assert (data["relative_error_scaled"][normal] <= 2.0**-11).all() and (~normal).any()
    assert round(100 * float(data["relative_error_scaled"].max()), 2) == 0.48


def exact_e2m1(v: Fraction) -> Fraction:
    """E2M1 round to nearest even, saturating at 6 (its overflow rule), by enumeration."""
    grid = [Fraction(k, 2) for k in (0, 1, 2, 3, 4, 6, 8, 12)]
    codes = {g: i for i, g in enumerate(grid)}
    best = min(grid, key=lambda g: (abs(g - v), codes[g] % 2))
    return best


def test_block_amax_floor_and_rceil_by_exact_arithmetic(lessons):
    data = lessons.block_amax_data()
    for amax, floor_back, rceil_back in zip(data["amax"], data["given_back"]["MXFP4, floor (OCP)"],
                                            data["given_back"]["MXFP4, rceil"]):
        a = Fraction(amax)
        k = a.numerator.bit_length() - a.denominator.bit_length()
        k -= Fraction(2) ** k > a  # floor(log2 a), exactly
        s_floor = Fraction(2) ** (k - 2)
        assert Fraction(floor_back) == exact_e2m1(a / s_floor) * s_floor
        v = Fraction(float(np.float32(np.float32(amax) * np.float32(1 / 6))))  # rceil: fp32(amax * fp32(1/6))
        e = v.numerator.bit_length() - v.denominator.bit_length()
        s_rceil = Fraction(2) ** (e + (Fraction(2) ** e < v))  # up to a power of two
        assert Fraction(rceil_back) == exact_e2m1(a / s_rceil) * s_rceil
    r = {k: (round(float(v.min()), 2), round(float(v.max()), 2)) for k, v in data["ratio"].items()}
    assert r == {"MXFP4, floor (OCP)": (0.75, 1.2), "MXFP4, rceil": (0.8, 1.2), "NVFP4 (UE4M3 x FP32)": (0.94, 1.06)}
    # everything under 0.8 is saturation: the scaled amax beyond 7, amax in (1.75, 2) x 2**k
    low = data["ratio"]["MXFP4, floor (OCP)"] < 0.8
    mant = 2 * np.frexp(data["amax"])[0]  # amax / 2**floor(log2 amax), exactly
    assert low.any() and (mant[low] > 1.75).all()
    assert Fraction(6 * 448) / (Fraction(2688) / Fraction(25, 2)) == Fraction(25, 2)  # NVFP4: 12.5 back exactly


def test_stochastic_rounding_is_unbiased_and_rne_stuck(lessons):
    data = lessons.stochastic_rounding_data(steps=60, copies=400)
    assert (data["rne"] == 1.0).all()
    p = Fraction(0.003) / Fraction(1, 2**7)
    assert round(float(p), 3) == 0.384
    # the mean of 400 copies within 5 standard errors of the exact sum, at every step
    sd = np.sqrt(np.arange(61) * float(p * (1 - p))) * 2.0**-7 / np.sqrt(400)
    assert (np.abs(data["sr_mean"] - data["exact"]) <= 5 * sd + 1e-12).all()
    r = fpemu.quantize(np.full(100_000, 1.1), "e4m3", rounding="stochastic", rng=0)
    up = (Fraction(1.1) - 1) / Fraction(1, 8)
    assert abs(float(np.mean(r == 1.125)) - float(up)) < 5 * np.sqrt(0.16 / 100_000)


def test_accumulation_worked_example(lessons):
    exact = 256 + 1024 * Fraction(1, 2**6)
    step = Fraction(2) ** (8 - 13)  # H100, FP8: 13 fraction bits below the exponent of 256
    truncated = 256 + 1024 * ((Fraction(1, 2**6) // step) * step)
    assert (exact, truncated) == (272, 256)
    data = lessons.accumulation_data()  # the figure's sizes, as the tutorial quotes them
    h100, b200 = data["relative_error"]["h100"], data["relative_error"]["b200"]
    assert data["sizes"][-1] == 8192 and round(100 * float(h100[-1])) == 13 and (np.diff(h100) > 0).all()
    assert (b200 <= 2.0**-23).all()


def test_fnuz_codes_by_the_formula():
    # 0x40: exponent field 8, mantissa 0: 2**(8 - bias)
    assert (Fraction(2) ** (8 - 7), Fraction(2) ** (8 - 8)) == (2, 1)
    assert float(fpemu.decode(np.uint8(0x40), "e4m3fnuz")) == 1.0
    assert fpemu.get_format("e4m3fnuz").max == float(Fraction(15, 8) * 2 ** (15 - 8)) == 240
    assert fpemu.get_format("e5m2fnuz").max == float(Fraction(7, 4) * 2 ** (31 - 16)) == 57344


# ---- issue 41: section 9's bounds, the figures' peaks and words, the exercises -------------------
def test_section_9s_bounds_and_the_sweep_reaches_them(lessons):
    """The floor and rceil rules give back less than 6/5 of a block's amax and come within
    2^-40 of it (just above 1.25 x 2^k); floor's least is 3/4 (just under 2^(k+1)), rceil's 4/5
    (5 ties to 4); NVFP4's UE4M3 block scale errs by at most 1/17 of itself: 16/17 to 18/17,
    up to float32's rounding, and the sweep comes within 1e-5 of both."""
    data = lessons.block_amax_data()
    exact = {k: [Fraction(float(b)) / Fraction(float(a)) for a, b in zip(data["amax"], v)]
             for k, v in data["given_back"].items()}  # (the ratio exactly, not the float64 quotient)
    floor, rceil, nv = (exact[k] for k in ("MXFP4, floor (OCP)", "MXFP4, rceil", "NVFP4 (UE4M3 x FP32)"))
    for ratio, low in ((floor, Fraction(3, 4)), (rceil, Fraction(4, 5))):
        assert all(low <= r < Fraction(6, 5) for r in ratio)
        assert Fraction(6, 5) - max(ratio) < Fraction(1, 2**40)
    assert min(rceil) == Fraction(4, 5) and min(floor) - Fraction(3, 4) < Fraction(1, 2**40)
    slack = Fraction(1, 2**22)  # (TransformerEngine's float32 products)
    assert all(Fraction(16, 17) - slack <= r <= Fraction(18, 17) + slack for r in nv)
    assert max(nv) > Fraction(18, 17) - Fraction(1, 10**5) and min(nv) < Fraction(16, 17) + Fraction(1, 10**5)
    # the case: UE4M3 rounds 28 x 1.2142892857 = 34.0001 up to 36
    back = fpemu.mx.quantize([1.2142892857] + [0.01] * 15, "nvfp4", global_amax=16.0).dequantize(np.float64)[0]
    assert back == 1.2857142686843872 and back / 1.2142892857 > 1.0588
    text = " ".join(TUTORIAL.read_text().split())
    assert "between 16/17 and 18/17" in text and "0.94 and 1.05" not in text and "1.19" not in text


def test_the_spacing_figure_shows_one_tooth_per_binade(lessons):
    data = lessons.spacing_zoom_data()
    for name, attained in (("fp16", Fraction(1, 2049)), ("bf16", Fraction(1, 257))):
        d = data["formats"][name]
        rel = d["relative"]
        rising = np.flatnonzero(np.diff(rel) > 0)  # the teeth: the error jumps up at each power of 2
        assert rising.size == int(np.log2(data["high"] / data["low"])) - 1  # 6 binades: 5 jumps inside
        edges = [Fraction(float(e)) for e in d["edges"]]
        worst = max((b - a) / (a + b) for a, b in zip(edges[:-1], edges[1:]))  # exactly, per gap
        assert worst == attained < Fraction(d["bound"]) and abs(float(rel.max()) - float(attained)) < 1e-15


def test_the_fp8_scaling_legend_never_rounds_to_none_or_all(lessons):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = lessons.fp8_scaling_data()
    fig, axes = plt.subplots(2, 1)
    try:
        lessons.draw_fp8_scaling(axes, data)
        words = [t.get_text() for ax in axes for t in ax.get_legend().get_texts()]
        assert any("plain cast: 99.95%" in w for w in words) and any("plain cast: 0.05%" in w for w in words)
        assert not any("100.0%" in w or " 0.0%" in w for w in words), words
        for ax in axes:  # the bars sit above the histogram's tallest bin
            tallest = max(p.get_height() for p in ax.patches if p.get_height() > 0 and p.get_width() < 2)
            assert tallest < 0.88 * ax.get_ylim()[1]
    finally:
        plt.close(fig)


def test_section_4_says_e4m3_has_two_nan_codes():
    codes = np.arange(256, dtype=np.uint8)
    assert codes[np.isnan(fpemu.decode(codes, "e4m3"))].tolist() == [0x7F, 0xFF]
    text = " ".join(TUTORIAL.read_text().split())
    assert "its only NaN" not in text and "`0x7F` and `0xFF`, its two NaN codes" in text


def test_the_exercises_cover_sections_7_9_11_and_12():
    text = TUTORIAL.read_text()
    exercises = text[text.index("## 13. Exercises"):]
    for section in (7, 9, 11, 12):
        assert f"(Section {section})" in exercises
    answers = exercises[exercises.index("### Answers"):]
    for number in range(1, 13):  # every question has its answer in the doctest, marked with its number
        assert re.search(rf"# {number}(:|\s*$)", answers, re.MULTILINE), number
