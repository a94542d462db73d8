#!/usr/bin/env bash
# Issue 22 on a GPU: workloads b (question-first, ~12M model) and e (question-first, ~89M
# GPT-2-small shape) with steadyeval's hf: and vllm: backends against lm-eval's --model hf and
# --model vllm, printing the same ratios as the CPU benchmark (bench/layouts_vs_lmeval.py).
#
#   bash bench/gpu.sh                 # full protocol (median of 3, lm-eval at its best batch)
#   bash bench/gpu.sh --quick         # one run each, fewer items
#   DRY=1 bash bench/gpu.sh --quick   # print the commands only (works without a GPU)
#
# Environment: PYTHON (default python), DTYPE (default float32; both tools), WORKLOADS
# (default be), THREADS (default: all cores). Without vLLM importable it runs hf only and
# says so. Extra arguments go to layouts_vs_lmeval.py (e.g. --batch-sizes 16,64,128).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PY="${PYTHON:-python}"
DRY="${DRY:-0}"
args=(--workloads "${WORKLOADS:-be}" --device cuda --dtype "${DTYPE:-float32}"
      --threads "${THREADS:-$(nproc)}" "$@")
if [ "$DRY" = 1 ]; then
  args+=(--dry-run)
elif ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu.sh: no CUDA device visible to torch; nothing run (DRY=1 prints the commands)" >&2
  exit 1
fi
backends=(hf)
if "$PY" -c "import vllm" 2>/dev/null; then
  backends+=(vllm)
else
  echo "gpu.sh: vLLM is not installed: running hf only (steadyeval hf: vs lm-eval --model hf)"
fi
for b in "${backends[@]}"; do
  echo
  echo "=== steadyeval ${b}: vs lm-eval --model ${b} (device cuda) ==="
  "$PY" "$HERE/layouts_vs_lmeval.py" --backend "$b" --lmeval-model "$b" "${args[@]}"
done
