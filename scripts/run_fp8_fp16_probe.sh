#!/usr/bin/env bash
# The fp8-fp16 experiment of issue 18 on a live NVIDIA GPU (Hopper H100/H200 or Blackwell B200), in
# one go (research/fp8_fp16, run from the repository root): every path (torch._scaled_mm with and without fast accumulation, mma.sync through NVRTC)
# for e4m3 and e5m2, the raw results and a note of device, driver and library versions written to
# tests/data/fp8_fp16_probe/, then every recorded file fitted with the staged-model search.
#
# Usage (from anywhere; needs python with numpy and torch built for CUDA):
#   scripts/run_fp8_fp16_probe.sh            # PYTHON=... to choose the interpreter
# Takes a few minutes (the GPU part is seconds; the per-path search runs on the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-tests/data/fp8_fp16_probe}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git rev-parse --short HEAD 2>/dev/null || echo no-git)"
  nvidia-smi --query-gpu=name,driver_version,vbios_version,compute_cap --format=csv 2>&1 || true
  nvcc --version 2>&1 | tail -n 2 || true
  "$PYTHON" -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'numpy', numpy.__version__)"
} > "$OUT/environment.txt"
"$PYTHON" -m research.fp8_fp16 probe --device cuda --record "$OUT" 2>&1 | tee "$OUT/probe_output.txt"
for f in "$OUT"/*.npz; do
  "$PYTHON" -m research.fp8_fp16 fit "$f" --space fp8-fp16 --top 5 --residuals 3 2>&1 | tee "${f%.npz}_fit.txt" || true
done
echo "done: $OUT (commit it with the note; see docs/fp8-fp16-output.md)"
