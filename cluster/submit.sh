#!/usr/bin/env bash
# Submit one MedScope job to a Ray cluster:
#   RAY_ADDRESS=http://HEAD:8265 cluster/submit.sh <job> <config.yaml> [extra ray job submit args]
# e.g. cluster/submit.sh demo configs/demo.yaml
#      cluster/submit.sh train configs/train/stage1.yaml
# Credentials for object storage and provider keys are forwarded from this shell as
# environment variables of the job (never written into configs or logs).
set -euo pipefail
cd "$(dirname "$0")/.."
job=${1:?usage: submit.sh <job> <config.yaml>}
config=${2:?usage: submit.sh <job> <config.yaml>}
shift 2
: "${RAY_ADDRESS:?set RAY_ADDRESS to the cluster's dashboard, e.g. http://127.0.0.1:8265}"
env_json=$(python3 - <<'PY'
import json, os
names = ["AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
         "AWS_DEFAULT_REGION", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY",
         "GOOGLE_API_KEY", "LAMA_MODEL"]
env = {n: os.environ[n] for n in names if os.environ.get(n)}
env.update({"PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"})
excludes = [".git", ".venv", "demo-out", "runs", "**/__pycache__", "*.nii.gz"]
print(json.dumps({"working_dir": ".", "excludes": excludes, "env_vars": env}))
PY
)
exec ray job submit --address "$RAY_ADDRESS" --runtime-env-json "$env_json" "$@" \
  -- python -m "pipelines.$job" --config "$config"
