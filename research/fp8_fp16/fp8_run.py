"""``python -m research.fp8_fp16 probe``: the experiment set run through every path of a device
in one go, each path judged against the named hypotheses (and, unless ``--no-search``, the
staged models of ``python -m research.fp8_fp16 fit --space fp8-fp16``), the raw results
recorded with ``--record``.

Devices: ``cuda`` (``torch._scaled_mm`` with and without fast accumulation, and the
``mma.sync`` instruction through NVRTC), ``cpu`` (torch's CPU FP8 GEMM: checks the plumbing),
``fake:NAME`` (a named staged model computes the answers: for tests and demonstrations).
"""

from __future__ import annotations

import re
from pathlib import Path

from .fp8_devices import device_info, gpu_paths, scaled_mm_device, staged_device
from .fp8_judge import as_dump, judge, record, verdict_report
from .fp8_probes import fp8_fp16_experiments
from .staged import describe

#: Input formats the experiment runs.
FP8_INPUTS = ("e4m3", "e5m2")


def _paths(device: str) -> tuple[dict, dict]:
    """(name -> factory of a run, device info) for --device."""
    if device.startswith("fake:"):
        name = device[5:]
        staged_device(name)  # an unknown name is a usage error, before anything runs
        return {"fake": lambda: staged_device(name)}, {"device": f"fake {name}"}
    if device == "cpu":
        return {"scaled_mm_cpu": lambda: scaled_mm_device("cpu")}, {**device_info(), "device": "torch cpu"}
    if device == "cuda":
        return gpu_paths(), device_info()
    raise ValueError(f"--device for the fp8-fp16 experiment: cuda, cpu or fake:NAME, got {device!r}")


def _slug(info: dict) -> str:
    name = str(info.get("device") or "device").lower().replace("nvidia", "")
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "device"


def run_fp8_fp16(device: str, inputs: list[str], record_dir: str | None = None, search: bool = True,
                 random_rows: int = 256) -> list:  # fmt: skip
    """Run, judge and print; returns the verdicts. A path that cannot run is reported and
    skipped; a device with no path that runs is a RunError."""
    from fpemu.errors import RunError

    bad = [i for i in inputs if i not in FP8_INPUTS]
    if bad:
        raise ValueError(f"the fp8-fp16 experiment takes {', '.join(FP8_INPUTS)} inputs, not {', '.join(bad)}")
    paths, info = _paths(device)
    print(f"fp8-fp16 experiment on {info.get('device', device)}"
          + (f" ({info['capability']})" if info.get("capability") else ""), flush=True)  # fmt: skip
    notes, verdicts = [], []
    note = None if record_dir is None else Path(record_dir) / f"{_slug(info)}_fp8_fp16_probe.txt"

    def keep(text: str) -> None:  # the note is rewritten after every path: a stopped run keeps what it had
        print(text, flush=True)
        notes.append(text)
        if note is not None:
            note.parent.mkdir(parents=True, exist_ok=True)
            head = [f"{k}: {v}" for k, v in info.items()]
            note.write_text("\n".join(["python -m research.fp8_fp16 probe", *head, "", *notes]) + "\n")

    for path_name, make in paths.items():
        for fmt in inputs:
            ex = fp8_fp16_experiments(fmt, random_rows)
            try:
                run = make()
                full, ex = ex.rows, getattr(run, "adapt", lambda e: e)(ex)  # rows a path cannot express are left out
                got = run(ex.a, ex.b, ex.c, fmt)
                if record_dir is not None:  # the raw results first, before anything can go wrong
                    out = record(Path(record_dir) / f"{_slug(info)}_{fmt}_{path_name}.npz", ex, got, {**info, "path": path_name})
                    print(f"  recorded {out}", flush=True)
                v = judge(path_name, ex, got)
            except Exception as exc:  # noqa: BLE001  (any failure of one path: report it, run the others)
                why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                keep(f"{path_name} ({fmt}): not available here ({type(exc).__name__}: {why[:300]})")
                continue
            verdicts.append(v)
            text = verdict_report(v)
            if ex.rows < full:
                text += f"\n  ({full - ex.rows} of {full} rows left out: this path cannot form their products)"
            if search and not v.broken:
                text += "\n" + _search_text(ex, got, path_name)
            keep(text)
    if note is not None:
        print(f"  recorded {note}", flush=True)
    if not verdicts:
        raise RunError(f"no path of --device {device} could run the fp8-fp16 experiment")
    return verdicts


def _search_text(ex, got, path_name: str) -> str:
    """The best staged models of the fp8-fp16 space on these answers."""
    from .staged_search import search_space

    result = search_space([as_dump(ex, got, path_name)], "fp8-fp16", screens=((64, 1000), (400, 100)), top=3)
    lines = [f"  staged models (fp8-fp16 space, {result.searched} searched) reproducing the most rows:"]
    for s in result.ranked:
        lines.append(f"    {s.total}/{ex.rows}  {describe(s.model, ex.a.shape[1])}")
    return "\n".join(lines)
