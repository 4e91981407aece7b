#!/usr/bin/env bash
# Stop the Ray head that cluster/start-local-head.sh started, and nothing else:
#   bash cluster/stop-local-head.sh            # the head on dashboard port 8265 (DASHBOARD_PORT=... for another)
# `ray stop` stops every Ray process of the user on the machine: on a shared workstation, other
# people's heads and other checkouts' runs too. start-local-head.sh starts its head in a session of
# its own and records its id in ${TMPDIR:-/tmp}/medscope-head-<uid>-<port>; this script sends that
# session's processes SIGTERM, waits up to GRACE_S seconds (default 16, as `ray stop`) for it to
# empty, then SIGKILLs what is left of that session only. (docs/cluster.md, "One workstation".)
set -euo pipefail
DASHBOARD_PORT=${DASHBOARD_PORT:-8265}
GRACE_S=${GRACE_S:-16}
STATE=${MEDSCOPE_HEAD_STATE:-${TMPDIR:-/tmp}/medscope-head-$(id -u)-$DASHBOARD_PORT}
if [ ! -f "$STATE" ]; then
  echo "stop-local-head.sh: no head recorded at $STATE (started by cluster/start-local-head.sh with DASHBOARD_PORT=$DASHBOARD_PORT?); nothing stopped" >&2
  exit 1
fi
pgid=$(sed -n 's/^HEAD_PGID=\([0-9][0-9]*\)$/\1/p' "$STATE")
[ -n "$pgid" ] || { echo "stop-local-head.sh: $STATE names no process group; nothing stopped" >&2; exit 1; }
# the session, not only the group: Ray's workers lead process groups of their own in the head's session
alive() { pgrep -s "$pgid" >/dev/null 2>&1; }
if ! alive; then
  rm -f "$STATE"
  echo "Ray head (process group $pgid) had already stopped"
  exit 0
fi
# a recycled group id would hold no Ray process: refuse rather than signal someone else's
if ! ps -o args= -g "$pgid" | grep -q "ray"; then
  echo "stop-local-head.sh: process group $pgid holds no Ray process (stale $STATE); nothing stopped" >&2
  exit 1
fi
pkill -TERM -s "$pgid" 2>/dev/null || true
for _ in $(seq "$GRACE_S"); do alive || break; sleep 1; done
if alive; then pkill -KILL -s "$pgid" 2>/dev/null || true; fi
for _ in 1 2 3 4 5; do alive || break; sleep 1; done
rm -f "$STATE"
echo "Ray head stopped (process group $pgid); other Ray processes on this machine untouched"
