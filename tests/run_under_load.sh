#!/usr/bin/env bash
# Run pytest with CPU-bound busy loops beside it, N times in a row (docs/testing.md).
#
#   tests/run_under_load.sh [-n RUNS] [-b BUSY] [-- PYTEST ARGS...]
#   tests/run_under_load.sh -n 3 -b 2 -- tests/cluster/test_multinode.py -x -q
#   tests/run_under_load.sh -n 1 -b 2 -- --durations=15        # the whole suite, once
#
# Each busy loop is one Python process spinning on one core; they are started before the
# first run and killed (by their own pids) when the script ends, however it ends. For each run
# the script prints its exit status, its wall time and the load average; it stops at the first
# failing run and exits with that run's status.
set -euo pipefail

runs=3
busy=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) runs="$2"; shift 2 ;;
    -b) busy="$2"; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || set -- tests/cluster/test_multinode.py -x -q

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$here/.venv/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3)"

pids=()
stop_busy() {
  for pid in "${pids[@]:-}"; do
    [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
  done
}
trap stop_busy EXIT INT TERM

for _ in $(seq "$busy"); do
  "$python" -c 'while True: pass' &
  pids+=("$!")
done
echo "under load: $busy busy loop(s) (pids ${pids[*]:-none}) on $(nproc) core(s); $runs run(s) of: pytest $*"

cd "$here"
for i in $(seq "$runs"); do
  start=$(date +%s)
  set +e
  "$python" -m pytest "$@"
  rc=$?
  set -e
  end=$(date +%s)
  echo "run $i/$runs: exit $rc, $((end - start)) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  [[ $rc -eq 0 ]] || exit "$rc"
done
echo "all $runs run(s) passed under load"
