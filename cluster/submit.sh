#!/usr/bin/env bash
# Submit one MedScope job to a Ray cluster:
#   RAY_ADDRESS=http://HEAD:8265 [OUT=URI] cluster/submit.sh <job> <config.yaml> [ray job submit args] [-- job flags]
# e.g. OUT=$PWD/demo-out cluster/submit.sh demo configs/demo.yaml
#      OUT=$PWD/small-demo cluster/submit.sh demo configs/demo.yaml -- --set cases=64   # a small demo, no config written
#      cluster/submit.sh demo configs/demo-s3.yaml
# OUT (an absolute path every node sees, or s3://...) overrides the config's out:. A job refuses a
# relative out: it would land in Ray's temporary copy of the working dir, which Ray deletes.
# Ray token auth (a head started where ~/.ray/auth_token exists requires it): the Ray 2.60
# client sends the token only in RAY_AUTH_MODE=token, so where a token is at hand
# (~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH) and RAY_AUTH_MODE is unset, this
# script sets it; RAY_AUTH_MODE=disabled keeps it off.
#      cluster/submit.sh train configs/train/jobs/stage1.yaml
# The entrypoint's `python` is the head's: Ray runs the entrypoint as a shell command on the head
# in the environment the head was started in, so heads start with MedScope's environment first
# on PATH (start-local-head.sh, the launcher's head_start_ray_commands, the image's PATH for
# KubeRay); a head started otherwise fails the job with ModuleNotFoundError.
# Only non-secret settings are forwarded as the job's environment: a runtime_env's env_vars
# are kept in Ray's job table and shown by `ray job list` and the dashboard, so credentials
# and provider keys must come from the nodes themselves (instance roles, Kubernetes Secrets,
# or the environment `ray start` ran in). docs/cluster.md says how.
set -euo pipefail
cd "$(dirname "$0")/.."
job=${1:?usage: submit.sh <job> <config.yaml>}
config=${2:?usage: submit.sh <job> <config.yaml>}
shift 2
# what follows "--" goes to the job (its flags override the config file, as on the command line)
ray_args=() job_args=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; job_args=("$@"); break; fi
  ray_args+=("$1"); shift
done
: "${RAY_ADDRESS:?set RAY_ADDRESS to the cluster dashboard, e.g. http://127.0.0.1:8265}"
# The checkout's own ray (as start-local-head.sh uses), else one on PATH; RAY= overrides both.
if [ -z "${RAY:-}" ]; then
  if [ -x .venv/bin/ray ]; then RAY=.venv/bin/ray
  elif command -v ray >/dev/null; then RAY=ray
  else echo "submit.sh: no .venv/bin/ray in $PWD and no ray on PATH; run bash cluster/setup-env.sh first (or set RAY=)" >&2; exit 127
  fi
fi
# (python -c, not a heredoc: bash cannot parse a quoted heredoc inside $(...) here)
env_json=$(python3 -c '
import json, os
names = ["AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "LAMA_MODEL"]
env = {n: os.environ[n] for n in names if os.environ.get(n)}
env.update({"PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"})
excludes = [".git", ".venv", "demo-out", "runs", "**/__pycache__", "*.nii.gz"]
print(json.dumps({"working_dir": ".", "excludes": excludes, "env_vars": env}))
')
if [ -z "${RAY_AUTH_MODE:-}" ] && { [ -n "${RAY_AUTH_TOKEN:-}" ] || [ -n "${RAY_AUTH_TOKEN_PATH:-}" ] \
     || [ -f "$HOME/.ray/auth_token" ]; }; then
  export RAY_AUTH_MODE=token
fi
out_args=()
if [ -n "${OUT:-}" ]; then
  case "$OUT" in
    /*|*://*) out_args=(--out "$OUT") ;;
    *) echo "submit.sh: OUT=$OUT is relative; give an absolute path (e.g. OUT=\$PWD/$OUT) or s3://..." >&2; exit 2 ;;
  esac
fi
# A head answers "No available agent to submit job" while its job agent is still starting (for up
# to a minute after `ray start` on a loaded machine); the job was not submitted, so that one answer is
# retried, SUBMIT_AGENT_RETRIES times (addition: 12), SUBMIT_RETRY_WAIT_S apart (addition: 5 s),
# saying so. A head that drops the connection mid-request ("Remote end closed connection without
# response", seen on a loaded machine) may or may not have taken the job, so every try carries one
# submission id (the user's --submission-id, else one made here): the head is asked for that job,
# a job it holds is followed to its end (its status decides the exit), one it does not is submitted
# again, and a second submission of the same id is refused by Ray ("already exists") rather than run
# twice. Any other failure, and the job's own exit status, pass through unchanged.
retries=${SUBMIT_AGENT_RETRIES:-12}
wait_s=${SUBMIT_RETRY_WAIT_S:-5}
submission_id=""
for ((i = 0; i < ${#ray_args[@]}; i++)); do
  case "${ray_args[$i]}" in
    --submission-id) submission_id=${ray_args[$((i + 1))]:-} ;;
    --submission-id=*) submission_id=${ray_args[$i]#--submission-id=} ;;
  esac
done
if [ -z "$submission_id" ]; then
  submission_id="medscope-$job-$(date -u +%Y%m%d-%H%M%S)-$(python3 -c 'import secrets; print(secrets.token_hex(3))')"
  ray_args+=(--submission-id "$submission_id")
fi
said=$(mktemp "${TMPDIR:-/tmp}/medscope-submit-XXXXXX")
trap 'rm -f "$said"' EXIT
follow() {
  # the head holds the job: its logs to the end, then its status decides the exit (as `ray job submit`)
  echo "submit.sh: the head holds job $submission_id; following it" >&2
  "$RAY" job logs --address "$RAY_ADDRESS" --follow "$submission_id" || true
  local status
  status=$("$RAY" job status --address "$RAY_ADDRESS" "$submission_id" 2>&1) || true
  echo "$status" >&2
  if grep -q "Job '$submission_id' succeeded" <<<"$status"; then exit 0; fi
  exit 1
}
attempt=0
while :; do
  attempt=$((attempt + 1))
  set +e
  # stdout as it was; stderr (where Ray's answer comes) shown and kept in $said
  { "$RAY" job submit --address "$RAY_ADDRESS" --runtime-env-json "$env_json" ${ray_args[@]+"${ray_args[@]}"} \
      -- python -m "pipelines.$job" --config "$config" ${out_args[@]+"${out_args[@]}"} \
      ${job_args[@]+"${job_args[@]}"} 2>&1 1>&3 3>&- | tee "$said" >&2
    rc=${PIPESTATUS[0]}; } 3>&1
  set -e
  if [ "$rc" -eq 0 ]; then exit 0; fi
  if [ "$attempt" -gt 1 ] && grep -q "submission_id $submission_id already exists" "$said"; then
    follow  # the dropped request had landed
  fi
  if [ "$attempt" -gt "$retries" ]; then exit "$rc"; fi
  if grep -q "No available agent to submit job" "$said"; then
    echo "submit.sh: the head's job agent is not up yet (attempt $attempt of $((retries + 1))); retrying in ${wait_s}s" >&2
  elif grep -Eq "Remote end closed connection without response|Connection aborted|Connection reset by peer" "$said"; then
    if "$RAY" job status --address "$RAY_ADDRESS" "$submission_id" >/dev/null 2>&1; then
      follow
    fi
    echo "submit.sh: the head dropped the connection before taking job $submission_id (attempt $attempt of $((retries + 1))); retrying in ${wait_s}s" >&2
  else
    exit "$rc"
  fi
  sleep "$wait_s"
done
