#!/usr/bin/env bash
# Start a Ray head on this workstation (e.g. one A100 box) so that jobs can be submitted
# to it exactly as to a cluster:
#   bash cluster/start-local-head.sh            # all CPUs and GPUs of the machine
#   RAY_ADDRESS=http://127.0.0.1:8265 cluster/submit.sh demo configs/demo.yaml
#   .venv/bin/ray stop                          # when done
set -euo pipefail
cd "$(dirname "$0")/.."
RAY=${RAY:-.venv/bin/ray}
GCS_PORT=${GCS_PORT:-6379}
DASHBOARD_PORT=${DASHBOARD_PORT:-8265}
args=(--head --port "$GCS_PORT" --dashboard-host 127.0.0.1 --dashboard-port "$DASHBOARD_PORT"
      --node-ip-address 127.0.0.1 --include-dashboard true --disable-usage-stats)
[ -n "${NUM_CPUS:-}" ] && args+=(--num-cpus "$NUM_CPUS")
[ -n "${NUM_GPUS:-}" ] && args+=(--num-gpus "$NUM_GPUS")
"$RAY" start "${args[@]}"
echo "Ray head up. Submit with: RAY_ADDRESS=http://127.0.0.1:$DASHBOARD_PORT cluster/submit.sh <job> <config>"
