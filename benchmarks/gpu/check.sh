#!/usr/bin/env bash
# Every method's GPU path on a GPU machine with no network (benchmarks/gpu/check.py; docs/gpu.md):
# installs the wheels benchmarks/gpu/prepare_wheels.sh put in .whl/ (carried there), runs the tests that need a GPU
# (they skip elsewhere; TESTS=0: not), then the check with BUDGET_S seconds a part (default 15), and writes
# $OUT/gpu_check.json (after each part), $OUT/gpu_check.log and $OUT/gpu_tests.log.
#   bash benchmarks/gpu/check.sh [check.py options]   # from the repo root, with .whl/ beside it
set -uo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH="/tmp/site:$PWD/textenvs/src:$PWD/textagents/src" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TEXTENVS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
OUT="${OUT:-/tmp/gpu_check}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$OUT/gpu_check.log"
if [ "${TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -p no:cacheprovider -rs tests/textagents/methods/test_ellm_cuda_graphs.py 2>&1 | tail -n 30 \
    | tee "$OUT/gpu_tests.log"
fi
timeout "${TIMEOUT_S:-480}" python3 benchmarks/gpu/check.py --device "${DEVICE:-cuda}" --budget-s "${BUDGET_S:-15}" \
  --out "$OUT/gpu_check.json" "$@" 2>&1 | grep -v -e 'it/s]' -e '^Loading weights' -e '^Writing model' | tee -a "$OUT/gpu_check.log"
