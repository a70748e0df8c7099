"""The reader programs of docs/golden.md, compiled from the page's own text and run on files that
``fpemu vectors`` wrote: the C++ reader of the .bin layout and the C program that includes a
generated header (each skipped where no compiler is found).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fpemu import cli
from fpemu.vectors import read_vectors

DOC = Path(__file__).resolve().parents[2] / "docs" / "golden.md"
CXX = shutil.which("g++") or shutil.which("c++")
CC = shutil.which("gcc") or shutil.which("cc")
needs_cxx = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or c++) on PATH")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (gcc or cc) on PATH")
CXX_FLAGS = ["-std=c++17", "-O1", "-Wall", "-Wextra", "-pedantic", "-Werror"]
C_FLAGS = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"]


def doc_block(first_line: str) -> str:
    """The one fenced code block of docs/golden.md that starts with ``first_line``."""
    blocks = re.findall(r"^```\w*\n(.*?)^```", DOC.read_text(), re.DOTALL | re.MULTILINE)
    found = [b for b in blocks if b.startswith(first_line)]
    assert len(found) == 1, f"docs/golden.md has {len(found)} code blocks starting {first_line!r}"
    return found[0]


def doc_commands() -> list[list[str]]:
    """The ``fpemu vectors`` commands of step 1 of the workflow, as argument lists."""
    block = doc_block("fpemu vectors bf16 --kind exhaustive --nan quiet_payload --out golden/bf16_rne.bin\n")
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("fpemu vectors ")]


def build(compiler: str, flags: list[str], source: Path) -> Path:
    exe = source.with_suffix(".exe")
    done = subprocess.run([compiler, *flags, "-o", str(exe), str(source)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{Path(compiler).name} failed on {source.name}:\n{done.stderr}"
    return exe


def run(exe: Path, *args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A directory holding golden/ as step 1 of the workflow makes it, with the CLI itself."""
    root = tmp_path_factory.mktemp("workflow")
    (root / "golden").mkdir()
    for argv in doc_commands():
        at = argv.index("--out") + 1
        argv[at] = str(root / argv[at])
        assert cli.main(argv) == 0
    assert sorted(p.name for p in (root / "golden").iterdir()) == ["bf16_rne.bin", "e4m3_sat.h"]
    return root


@pytest.fixture(scope="module")
def cpp_reader(workdir) -> Path:
    source = workdir / "check_bf16.cpp"
    source.write_text(doc_block("// check_bf16.cpp"))
    return source


def test_the_workflow_writes_what_the_page_says():
    assert doc_commands() == [
        ["vectors", "bf16", "--kind", "exhaustive", "--nan", "quiet_payload", "--out", "golden/bf16_rne.bin"],
        ["vectors", "e4m3", "--kind", "edge", "--overflow", "saturate", "--out", "golden/e4m3_sat.h"],
    ]


@needs_cxx
def test_cpp_reader_passes_the_correct_kernel(workdir, cpp_reader):
    done = run(build(CXX, CXX_FLAGS, cpp_reader), workdir / "golden" / "bf16_rne.bin")
    assert (done.returncode, done.stdout) == (0, b"0 of 392448 codes differ\n")


@needs_cxx
def test_cpp_reader_catches_ties_rounded_away(workdir, cpp_reader):
    text = cpp_reader.read_text()
    assert text.count("0x7FFFu + ((x >> 16) & 1)") == 1
    broken = workdir / "broken_bf16.cpp"
    broken.write_text(text.replace("0x7FFFu + ((x >> 16) & 1)", "0x8000u"))
    done = run(build(CXX, CXX_FLAGS, broken), workdir / "golden" / "bf16_rne.bin")
    assert done.returncode == 1
    assert done.stdout.decode().splitlines() == [
        "input 0x00008000: kernel 0x0001, fpemu 0x0000",  # 2^-134: a tie, to the even code 0
        "input 0x00028000: kernel 0x0003, fpemu 0x0002",
        "input 0x00048000: kernel 0x0005, fpemu 0x0004",
        "32640 of 392448 codes differ",
    ]


@needs_cxx
def test_cpp_reader_refuses_what_it_cannot_read(workdir, cpp_reader, tmp_path):
    exe = build(CXX, CXX_FLAGS, cpp_reader)
    e4m3 = tmp_path / "e4m3.bin"  # code is uint8 there: a read as uint16 finds no such array
    assert cli.main(["vectors", "e4m3", "--out", str(e4m3)]) == 0
    short = tmp_path / "short.bin"  # ends one byte before the last code
    data = (workdir / "golden" / "bf16_rne.bin").read_bytes()
    code = json.loads(data.split(b"\n")[1])["arrays"]["code"]
    short.write_bytes(data[: code["offset"] + code["nbytes"] - 1])
    npz = tmp_path / "bf16.npz"
    assert cli.main(["vectors", "bf16", "--out", str(npz)]) == 0
    for path in (e4m3, short, npz, tmp_path / "missing.bin"):
        done = run(exe, path)
        assert (done.returncode, done.stdout) == (2, b"cannot read the vectors\n"), path.name


# Every array of every kind of file, through the page's read_array, byte for byte.
_DUMP = """#define main doc_main
#include "check_bf16.cpp"
#undef main
int main(int argc, char** argv) {  // dump FILE NAME DTYPE: the array's bytes on stdout
  if (argc != 4) return 2;
  const std::vector<unsigned char> a = read_array<unsigned char>(argv[1], argv[2], argv[3]);
  std::fwrite(a.data(), 1, a.size(), stdout);
  return a.empty();
}
"""

KINDS = {
    "cast-sr": ["e4m3", "--kind", "random", "--n", "333", "--rounding", "sr", "--seed", "3"],
    "cast-f64": ["fp16", "--kind", "random", "--n", "100", "--source", "f64"],
    "cast-tf32": ["tf32", "--kind", "random", "--n", "100"],
    "block": ["mxfp4", "--kind", "edge"],
    "nvfp4": ["nvfp4", "--kind", "random", "--n", "16"],
    "dot": ["e5m2", "--accumulator", "h100", "--n", "40"],
    "dot-fp16": ["fp16", "--accumulator", "v100", "--n", "40", "--out-format", "fp16"],
}


def _le_bytes(arr: np.ndarray) -> bytes:
    return np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()


@needs_cxx
@pytest.mark.parametrize("kind", KINDS)
def test_cpp_reader_reads_every_array(workdir, cpp_reader, tmp_path, kind):
    harness = workdir / "dump_bin.cpp"
    if not harness.exists():
        harness.write_text(_DUMP)
    exe = workdir / "dump_bin.exe"
    if not exe.exists():
        build(CXX, CXX_FLAGS, harness)
    path = tmp_path / f"{kind}.bin"
    assert cli.main(["vectors", *KINDS[kind], "--out", str(path)]) == 0
    v = read_vectors(path)
    arrays = {k: a for k, a in v.items() if k != "meta"}
    assert len(arrays) >= 3
    for name, arr in arrays.items():
        done = run(exe, path, name, arr.dtype.name)
        assert done.returncode == 0 and done.stdout == _le_bytes(arr), name
        other = "uint16" if arr.dtype.name != "uint16" else "uint8"
        assert run(exe, path, name, other).returncode == 1  # the dtype is part of what is searched


@needs_cc
def test_c_program_checks_one_value_of_the_header(workdir):
    source = workdir / "check_e4m3.c"
    source.write_text(doc_block("/* check_e4m3.c"))
    assert '#include "golden/e4m3_sat.h"' in source.read_text()
    done = run(build(CC, C_FLAGS, source))
    assert (done.returncode, done.stdout) == (0, b"e4m3, overflow saturate: 480.0f -> 0x7E\n")


@needs_cxx
def test_c_program_compiles_as_cpp_too(workdir):
    source = workdir / "check_e4m3_cpp.cpp"  # the header in C++ (and CUDA host) code
    source.write_text(doc_block("/* check_e4m3.c"))
    done = run(build(CXX, ["-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror"], source))
    assert (done.returncode, done.stdout) == (0, b"e4m3, overflow saturate: 480.0f -> 0x7E\n")


def _dump_header_program(prefix: str, arrays: dict) -> str:
    """A C program that writes every array of header ``prefix``.h to stdout and its
    _LEN/_ROWS/_COLS and N defines to stderr."""
    lines = ["#include <stdio.h>", f'#include "{prefix}.h"', "int main(void) {"]
    for name, arr in arrays.items():
        c, C = f"{prefix}_{name}", f"{prefix.upper()}_{name.upper()}"
        lines.append(f"  fwrite({c}, 1, sizeof {c}, stdout);")
        dims = f"{C}_ROWS, (long){C}_COLS" if arr.ndim == 2 else "0L, 0L"
        lines.append(f'  fprintf(stderr, "{name} %ld %ld %ld %ld\\n", (long){C}_LEN, (long){dims}, (long)sizeof {c}[0]);')
    lines += [f'  fprintf(stderr, "N %ld %s\\n", (long){prefix.upper()}_N, {prefix.upper()}_FPEMU);', "  return 0;", "}"]
    return "\n".join(lines) + "\n"


@needs_cc
@pytest.mark.parametrize("kind", KINDS)
def test_c_header_compiles_to_the_same_bits(tmp_path, kind):
    path = tmp_path / f"{kind.replace('-', '_')}.h"
    assert cli.main(["vectors", *KINDS[kind], "--out", str(path)]) == 0
    v = read_vectors(path)
    arrays = {k: a for k, a in v.items() if k != "meta"}
    source = tmp_path / "dump.c"
    source.write_text(_dump_header_program(path.stem, arrays))
    done = run(build(CC, C_FLAGS, source))
    assert done.returncode == 0
    assert done.stdout == b"".join(_le_bytes(a) for a in arrays.values())
    want = [f"{k} {a.size} {a.shape[0] if a.ndim == 2 else 0} {a.shape[1] if a.ndim == 2 else 0} "
            f"{a.itemsize * (a.shape[1] if a.ndim == 2 else 1)}" for k, a in arrays.items()]  # fmt: skip
    want.append(f"N {v['meta']['n']} {v['meta']['fpemu']}")
    assert done.stderr.decode().splitlines() == want


@needs_cc
def test_c_header_keeps_awkward_metadata_intact(tmp_path):
    from fpemu.vectors.cheader import c_header_text

    note = 'ends */ a comment, has "quotes", a back\\slash, ??= a trigraph, a\nnewline and caf\u00e9'
    v = {"meta": {"type": "demo", "note": note, "n": 1}, "x": np.array([7], dtype=np.uint8)}
    (tmp_path / "odd.h").write_text(c_header_text(v, "odd"))
    source = tmp_path / "odd.c"
    source.write_text('#include <stdio.h>\n#include "odd.h"\nint main(void) { fputs(ODD_NOTE, stdout); return odd_x[0]; }\n')
    done = run(build(CC, C_FLAGS, source))
    assert (done.returncode, done.stdout) == (7, note.encode("utf-8"))
