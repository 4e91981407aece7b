#!/usr/bin/env bash
# Start a Ray head on this workstation (e.g. one A100 box) so that jobs can be submitted
# to it exactly as to a cluster:
#   bash cluster/start-local-head.sh            # all CPUs and GPUs of the machine
#   export RAY_ADDRESS=http://127.0.0.1:8265
#   OUT=$PWD/demo-out cluster/submit.sh demo configs/demo.yaml
#   bash cluster/stop-local-head.sh             # when done: this head only (`ray stop` stops every Ray of yours)
# (docs/cluster.md, "One workstation"; nothing needs activating.)
# Extra arguments go to `ray start` (e.g. --block, --temp-dir DIR, other ports).
# Token auth: Ray 2.60 turns it on for a head started where ~/.ray/auth_token exists (or with
# RAY_AUTH_MODE=token); submit.sh on the same machine then reads the same token file. Set
# RAY_AUTH_MODE=disabled for a head without it (loopback only: anyone on the box can submit).
set -euo pipefail
cd "$(dirname "$0")/.."
RAY=${RAY:-.venv/bin/ray}
# Ray runs a job's entrypoint (`python -m pipelines.<job>`, as submit.sh sends it) as a shell
# command on the head, in the environment the head was started in. So the head starts with the
# bin/ folder of the environment that holds this `ray` (the checkout's .venv) first on PATH:
# the job's `python` is then the interpreter with MedScope installed, whatever the caller's PATH.
ray_path=$(command -v "$RAY") || { echo "start-local-head.sh: no $RAY; run bash cluster/setup-env.sh first" >&2; exit 127; }
PATH="$(cd "$(dirname "$ray_path")" && pwd):$PATH"
export PATH
GCS_PORT=${GCS_PORT:-6379}
DASHBOARD_PORT=${DASHBOARD_PORT:-8265}
args=(--head --port "$GCS_PORT" --dashboard-host 127.0.0.1 --dashboard-port "$DASHBOARD_PORT"
      --node-ip-address 127.0.0.1 --include-dashboard true --disable-usage-stats)
[ -n "${NUM_CPUS:-}" ] && args+=(--num-cpus "$NUM_CPUS")
[ -n "${NUM_GPUS:-}" ] && args+=(--num-gpus "$NUM_GPUS")
# In a session of its own, so that every process of this head (GCS, raylet, dashboard, workers)
# is in one process group, whose id is recorded for stop-local-head.sh: it stops this head only,
# never another user's or another checkout's Ray on the machine (`ray stop` stops them all).
STATE=${MEDSCOPE_HEAD_STATE:-${TMPDIR:-/tmp}/medscope-head-$(id -u)-$DASHBOARD_PORT}
if [ "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" ]; then
  # already the leader of a session of its own (started with setsid, or by a supervisor that
  # did): the head's processes share it, and whoever started this script can end them with it
  head_pgid=$$
  "$RAY" start "${args[@]}" "$@"
else
  setsid "$RAY" start "${args[@]}" "$@" &
  head_pgid=$!
  wait "$head_pgid"
fi
printf 'HEAD_PGID=%s\nGCS_ADDRESS=127.0.0.1:%s\nDASHBOARD=http://127.0.0.1:%s\n' \
  "$head_pgid" "$GCS_PORT" "$DASHBOARD_PORT" > "$STATE"
mode=${RAY_AUTH_MODE:-$([ -f "$HOME/.ray/auth_token" ] && echo token || echo disabled)}
echo "Ray head up (auth: $mode). Submit with: RAY_ADDRESS=http://127.0.0.1:$DASHBOARD_PORT cluster/submit.sh <job> <config>"
echo "Stop this head only with: bash cluster/stop-local-head.sh (recorded in $STATE)"
