#!/usr/bin/env bash
# Ray's own command line, set up as cluster/submit.sh sets it, for following and inspecting jobs:
#   cluster/ray.sh job logs --follow medscope-demo-1      # RAY_ADDRESS=http://HEAD:8265, as for submit.sh
#   cluster/ray.sh job list
#   cluster/ray.sh status                                  # the head start-local-head.sh started
# - the checkout's .venv/bin/ray (else `ray` on PATH; RAY= overrides);
# - RAY_AUTH_MODE=token when a token is at hand (~/.ray/auth_token, RAY_AUTH_TOKEN or
#   RAY_AUTH_TOKEN_PATH) and RAY_AUTH_MODE is unset: the Ray 2.60 client sends the token only then,
#   and a head started with one refuses a client without it ("Authentication required");
# - `status` / `memory` read the GCS, not the dashboard: an http:// RAY_ADDRESS (the dashboard's,
#   for jobs) is replaced by the GCS address start-local-head.sh recorded for DASHBOARD_PORT.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${RAY:-}" ]; then
  if [ -x .venv/bin/ray ]; then RAY=.venv/bin/ray
  elif command -v ray >/dev/null; then RAY=ray
  else echo "ray.sh: no .venv/bin/ray in $PWD and no ray on PATH; run bash cluster/setup-env.sh first (or set RAY=)" >&2; exit 127
  fi
fi
if [ -z "${RAY_AUTH_MODE:-}" ] && { [ -n "${RAY_AUTH_TOKEN:-}" ] || [ -n "${RAY_AUTH_TOKEN_PATH:-}" ] \
     || [ -f "$HOME/.ray/auth_token" ]; }; then
  export RAY_AUTH_MODE=token
fi
case "${1:-}" in
  status|memory)
    case "${RAY_ADDRESS:-}" in
      http://*|https://*)
        STATE=${MEDSCOPE_HEAD_STATE:-${TMPDIR:-/tmp}/medscope-head-$(id -u)-${DASHBOARD_PORT:-8265}}
        gcs=$( [ -f "$STATE" ] && sed -n 's/^GCS_ADDRESS=//p' "$STATE" || true)
        if [ -n "$gcs" ]; then export RAY_ADDRESS=$gcs
        else echo "ray.sh: RAY_ADDRESS=$RAY_ADDRESS is the dashboard's; $1 needs the head's GCS address (RAY_ADDRESS=HOST:6379)" >&2; exit 2
        fi ;;
    esac ;;
esac
exec "$RAY" "$@"
