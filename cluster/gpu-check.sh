#!/usr/bin/env bash
# One check of every accelerator path (pipelines/bench/gpu.py; docs/cluster.md, GPU runbook):
# bf16 and fp32 LoRA steps through the Ray Train worker's trainer, DeepSpeed ZeRO-2 on one GPU,
# the diffusion inpainting view tool, local VLM evaluation batched and one by one. Each check has
# a time budget and one result line; a table is printed and written to OUT/gpu_check.json; exit 1
# on any failure.
#   cluster/gpu-check.sh --prepare gpu-wheels     # where PyPI is reachable: wheels a bare GPU
#                                                 # machine lacks (Python 3.12, manylinux), < 64 MiB
#   cluster/gpu-check.sh --wheels gpu-wheels --out "$OUT/gpu-check"   # on the GPU machine, offline
#   cluster/gpu-check.sh --out gpu-check          # where the environment is complete (setup-env.sh)
#   cluster/gpu-check.sh --device cpu --quick --out /tmp/gc   # the CPU form the test suite runs
# Nothing needs activating: the checkout's .venv/bin/python when there is one, else python3
# (PYTHON= overrides). --wheels installs into OUT/site-packages (--target), never into the system.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
prepare="" wheels="" out="gpu-check" args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare) prepare=${2:?--prepare needs a folder}; shift 2 ;;
    --wheels) wheels=${2:?--wheels needs a folder}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ -n "$prepare" ]; then
  exec "$PYTHON" -m pipelines.bench.gpu_wheels "$prepare"
fi
if [ -n "$wheels" ]; then
  site="$out/site-packages"
  mkdir -p "$site"
  "$PYTHON" -m pip install --quiet --no-index --no-deps --disable-pip-version-check --target "$site" "$wheels"/*.whl
  export PYTHONPATH="$PYTHONPATH:$(cd "$site" && pwd)"
fi
exec "$PYTHON" -m pipelines.bench.gpu --out "$out" "${args[@]}"
