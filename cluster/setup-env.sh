#!/usr/bin/env bash
# Create (or refresh) the project virtual environment in .venv.
#   bash cluster/setup-env.sh          runtime: the pipeline and its CLI
#   bash cluster/setup-env.sh --dev    plus the test tools (and the interop extra, lmms-eval)
#   bash cluster/setup-env.sh --interop  runtime plus the interop extra (export hf / lmms-eval)
# torch is installed first and pinned (constraints.txt): the CPU build on a CPU machine,
# the CUDA build of the same release on a GPU node. Everything else is installed against
# that pin so no package can pull another torch.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
extra=""
[ "${1:-}" = "--dev" ] && extra="[dev]"  # dev includes the interop extra
[ "${1:-}" = "--interop" ] && extra="[interop]"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
"${pip[@]}" torch==2.13.0
"${pip[@]}" -c constraints.txt -e ".${extra}"
# opencv-contrib-python-headless and opencv-python-headless both own cv2/: in an env that had the
# plain one, remove it and reinstall contrib so cv2 (with cv2.xphoto) is contrib's alone.
if .venv/bin/python -m pip show -q opencv-python-headless >/dev/null 2>&1; then
  .venv/bin/python -m pip uninstall -q -y opencv-python-headless
  "${pip[@]}" -c constraints.txt --force-reinstall --no-deps opencv-contrib-python-headless
fi
# simple-lama-inpainting would pull torchvision and opencv-python; its code needs neither.
"${pip[@]}" -c constraints.txt --no-deps simple-lama-inpainting==0.1.2
# lmms-eval (the interop extra's harness, docs/interop.md) asks for wandb (protobuf<7), torchvision
# and opencv-python-headless, none of which this stack can take: installed without its requirements;
# the few its CLI path imports come with the interop extra (constraints.txt says which and why).
# Measured on 2 loaded cores: about 30 s added (the CLI-path packages 19 s, lmms-eval 10 s).
if [ -n "$extra" ]; then
  "${pip[@]}" -c constraints.txt --no-deps lmms-eval==0.7
fi
# DeepSpeed builds against the installed torch, so no isolated build environment.
.venv/bin/python -c "import deepspeed" 2>/dev/null || \
  "${pip[@]}" -c constraints.txt --no-build-isolation deepspeed==0.19.8
# --dev: the reading-page test (tests/reader/test_browser.py) drives Debian's chromium through
# chromedriver; without them that one test skips, saying why.
if [ "$extra" = "[dev]" ] && ! { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }; then
  if command -v apt-get >/dev/null; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium chromium-driver; } ||
      echo "warning: chromium / chromium-driver not installed; the reader browser test will skip" >&2
  else
    echo "warning: no apt-get; install chromium and chromedriver for the reader browser test" >&2
  fi
fi
echo "environment ready: .venv ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
