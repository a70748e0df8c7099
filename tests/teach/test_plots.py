"""The teaching figures: the plotted arrays are held to fpemu.decode of every code, to exact
arithmetic and to the MX quantizer; the PNG is written and non-empty; ``fpemu plot`` fails in
one line."""

from __future__ import annotations

import builtins
from fractions import Fraction

import numpy as np
import pytest
from cli_helpers import fails

import fpemu
from fpemu.cli import main
from fpemu.teach import (
    draw_number_line,
    draw_ranges,
    draw_spacing,
    number_line,
    plot,
    ranges,
    spacing,
)


def positive_values(name: str) -> np.ndarray:
    """Independently of fpemu.teach: decode every code, keep the positive finite values."""
    fmt = fpemu.get_format(name)
    codes = np.arange(fmt.num_codes, dtype=np.uint64) << np.uint64(fmt.code_shift)
    v = fpemu.decode(codes.astype(fmt.code_dtype), fmt)
    return np.unique(v[np.isfinite(v) & (v > 0)])


# ---- the data -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e2m1", "e3m2", "e2m3", "fp16", "bf16", "e8m0", "int8"])
def test_number_line_is_every_positive_value(name):
    fmt = fpemu.get_format(name)
    line = number_line(name)
    assert np.array_equal(line["values"], positive_values(name))
    assert np.array_equal(line["log2"], np.log2(positive_values(name)))
    # subnormals: exactly the multiples k * 2**(emin - M), k < 2**M, of a format with normals
    sub = line["values"][line["subnormal"]]
    if fmt.has_normals and fmt.subnormals:
        k = np.arange(1, 1 << fmt.mantissa_bits)
        assert np.array_equal(sub, k * 2.0 ** (1 - fmt.bias - fmt.mantissa_bits))
    assert line["max"] == positive_values(name)[-1]
    assert line["has_zero"] == (name != "e8m0")


def test_number_line_landmarks_of_e4m3():
    line = number_line("e4m3")
    assert line["values"].size == 126 and line["subnormal"].sum() == 7
    assert (line["min_normal"], line["max"], line["overflow_threshold"]) == (2.0**-6, 448.0, 464.0)
    assert line["has_negatives"] and not number_line("ue4m3")["has_negatives"]


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e2m1", "fp16"])
def test_spacing_and_relative_bound_by_exact_arithmetic(name):
    fmt = fpemu.get_format(name)
    v = positive_values(name)
    s = spacing(name)
    assert np.array_equal(s["lower"], v[:-1]) and np.array_equal(s["upper"], v[1:])
    for i in range(0, v.size - 1, max(1, v.size // 200)):
        a, b = Fraction(v[i]), Fraction(v[i + 1])
        assert Fraction(s["spacing"][i]) == b - a
        assert s["relative_bound"][i] == float((b - a) / (a + b))
    normal = s["lower"] >= fmt.min_normal
    u = 2.0 ** -(fmt.mantissa_bits + 1)
    assert s["unit_roundoff"] == u
    # in a normal binade the worst gap is the first: 2**-M / (2 + 2**-M) = u / (1 + u)
    assert s["relative_bound"][normal].max() == pytest.approx(u / (1 + u), rel=1e-15)
    assert (s["relative_bound"][normal] < u).all()


def test_the_codec_reaches_the_relative_bound_at_a_midpoint():
    s = spacing("e4m3")
    for i in (10, 40, 100):
        a, b = s["lower"][i], s["upper"][i]
        mid = (a + b) / 2
        q = float(fpemu.quantize(np.array([mid]), "e4m3")[0])
        assert abs(q - mid) / mid == s["relative_bound"][i]


def test_ranges_of_the_seed_formats_by_exact_arithmetic():
    by_name = {r["name"]: r for r in ranges()}
    assert list(by_name) == ["fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m1", "mxfp4"]
    assert (by_name["fp32"]["min_positive"], by_name["fp32"]["min_normal"]) == (2.0**-149, 2.0**-126)
    assert by_name["fp32"]["max"] == float((2 - Fraction(1, 2**23)) * 2**127) == float(np.finfo(np.float32).max)
    assert by_name["tf32"]["min_positive"] == 2.0**-136
    assert by_name["tf32"]["max"] == float((2 - Fraction(1, 2**10)) * 2**127)
    for name in ("fp16", "bf16", "e4m3", "e5m2", "e2m1"):
        v = positive_values(name)
        assert (by_name[name]["min_positive"], by_name[name]["max"]) == (v[0], v[-1])
        assert by_name[name]["binades"] == np.log2(v[-1] / v[0])
    assert by_name["e2m1"]["min_normal"] == 1.0 and by_name["fp16"]["binades"] == np.log2(65504 * 2.0**24)


def test_the_mx_range_is_what_mx_quantize_represents():
    e = ranges(["mxfp4"])[0]
    assert (e["min_positive"], e["max"]) == (2.0**-128, 6 * 2.0**127)
    assert (e["block_min"], e["block_max"], e["scale"]) == (0.5, 6.0, "e8m0")
    for x in (e["min_positive"], e["max"]):  # each alone in a block comes back exactly
        assert fpemu.mx.quantize([x], "mxfp4").dequantize(np.float64)[0] == x
    assert fpemu.mx.quantize([e["min_positive"] / 2], "mxfp4").dequantize(np.float64)[0] == 0
    nv = ranges(["nvfp4"])[0]  # block scale only: e2m1 times UE4M3 (2**-9 .. 448)
    assert (nv["min_positive"], nv["max"]) == (2.0**-10, 2688.0)


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown format 'fp9'"):
        ranges(["fp9"])
    with pytest.raises(ValueError, match="at least one"):
        ranges([])


# ---- the figure's own arrays ------------------------------------------------------------------
def test_number_line_axes_hold_every_value(plt):
    fig, axes = plt.subplots(2, 1)
    drawn = draw_number_line(axes, ["e4m3", "e2m1"])
    for ax, name, data in zip(axes, ["e4m3", "e2m1"], drawn):
        normal, sub = ax.lines[0], ax.lines[1]
        xs = np.concatenate([normal.get_xdata(), sub.get_xdata()])
        assert np.array_equal(np.sort(xs), np.log2(positive_values(name)))  # x is log2 |value|
        assert np.array_equal(sub.get_xdata(), np.log2(data["values"][data["subnormal"]]))
    assert np.array_equal(axes[0].lines[1].get_xdata(), np.log2(np.arange(1, 8) * 2.0**-9))
    assert axes[1].lines[1].get_xdata().tolist() == [-1.0]  # e2m1's one subnormal, 0.5


def test_spacing_axes_hold_the_gaps(plt):
    fig, (top, bottom) = plt.subplots(2, 1)
    drawn = draw_spacing(top, bottom, ["e5m2"])
    v = positive_values("e5m2")
    # every gap drawn as wide as it is: x runs over every value, the last gap's height repeated
    assert np.array_equal(top.lines[0].get_xdata(), v)
    assert np.array_equal(top.lines[0].get_ydata(), np.append(np.diff(v), v[-1] - v[-2]))
    assert np.array_equal(bottom.lines[0].get_ydata()[:-1], drawn[0]["relative_bound"])


def test_range_bars_span_the_formats(plt):
    fig, ax = plt.subplots()
    drawn = draw_ranges(ax, ["e4m3", "mxfp4"])
    bars = ax.patches  # per format: subnormal part, normal part (and the block's bar)
    assert bars[0].get_x() == -9 and bars[1].get_x() + bars[1].get_width() == np.log2(448)
    assert drawn[1]["x"].tolist() == [-128.0, np.log2(2.0**-127), np.log2(6 * 2.0**127)]
    assert bars[4].get_x() == -1 and bars[4].get_width() == np.log2(12)  # one block: 0.5 .. 6


def test_plot_writes_a_png(plt, tmp_path):
    out = tmp_path / "fp8.png"
    drawn = plot(["e4m3", "e5m2"], out)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert set(drawn) == {"line", "spacing", "ranges"}
    assert np.array_equal(drawn["line"][1]["values"], positive_values("e5m2"))
    r = plot(["fp32", "bf16", "mxfp4", "nvfp4"], tmp_path / "r.png", kind="ranges")
    assert [e["name"] for e in r["ranges"]] == ["fp32", "bf16", "mxfp4", "nvfp4"]
    assert (tmp_path / "r.png").stat().st_size > 10_000


def test_plot_refuses_what_it_cannot_draw(tmp_path):
    out = tmp_path / "x.png"
    with pytest.raises(ValueError, match="--kind ranges"):
        plot(["fp32"], out, kind="line")
    with pytest.raises(ValueError, match="block format"):
        plot(["mxfp4"], out, kind="spacing")
    with pytest.raises(ValueError, match="unknown kind"):
        plot(["e4m3"], out, kind="pie")
    assert not out.exists()


# ---- fpemu plot ---------------------------------------------------------------------------------
def test_cli_plot(plt, tmp_path, capsys):
    out = tmp_path / "f.png"
    assert main(["plot", "e4m3", "e2m1", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out and out.stat().st_size > 20_000
    assert main(["plot", "fp32", "tf32", "mxfp4", "-k", "ranges", "-o", str(tmp_path / "r.png")]) == 0


@pytest.mark.parametrize("argv, status, says", [
    (["plot", "fp9", "--out", "{tmp}/a.png"], 2, "unknown format 'fp9'"),
    (["plot", "fp32", "--out", "{tmp}/a.png"], 2, "use --kind ranges"),
    (["plot", "mxfp4", "--out", "{tmp}/a.png"], 2, "block format"),
    (["plot", "e4m3", "--kind", "pie", "--out", "{tmp}/a.png"], 2, "invalid choice"),
    (["plot", "e4m3", "--out", "{tmp}/no/such/dir/a.png"], 2, "does not exist"),
    (["plot", "e4m3", "--out", "{tmp}"], 2, "is a directory"),
    (["plot", "e4m3"], 2, "--out"),
])
def test_cli_plot_errors_are_one_line(tmp_path, capsys, argv, status, says):
    fails([a.replace("{tmp}", str(tmp_path)) for a in argv], status, capsys, says=says)
    assert not (tmp_path / "a.png").exists()


def test_cli_plot_without_matplotlib(tmp_path, capsys, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    fails(["plot", "e4m3", "--out", str(tmp_path / "a.png")], 1, capsys, says="pip install 'fpemu[plot]'")
    assert not (tmp_path / "a.png").exists()


def test_plot_json_says_what_was_drawn(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    import json

    from fpemu.cli import main

    out = tmp_path / "r.png"
    assert main(["plot", "e4m3", "mxfp4", "--kind", "ranges", "-o", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"path": str(out), "panels": ["ranges"], "formats": ["e4m3", "mxfp4"]}
    assert out.stat().st_size > 0


# Regressions (each failed on the code before its fix): the image type.
# ---- 6. plot: the image type of the suffix ---------------------------------------------------------
@pytest.mark.parametrize("suffix,magic", [(".jpg", b"\xff\xd8\xff"), (".JPEG", b"\xff\xd8\xff"), (".png", b"\x89PNG"),
                                          (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_plot_writes_the_type_of_the_suffix(tmp_path, capsys, suffix, magic):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"r{suffix}"
    assert main(["plot", "e2m1", "--kind", "ranges", "--out", str(out)]) == 0
    assert out.read_bytes().startswith(magic)
    assert str(out) in capsys.readouterr().out


@pytest.mark.parametrize("name,says", [("r.txt", "'.txt'"), ("r", "no suffix"), ("r.png.part", "'.part'")])
def test_plot_refuses_a_suffix_matplotlib_cannot_write(tmp_path, capsys, name, says):
    pytest.importorskip("matplotlib")
    fails(["plot", "e2m1", "--kind", "ranges", "--out", str(tmp_path / name)], 2, capsys, says=says)
    assert not list(tmp_path.iterdir())
