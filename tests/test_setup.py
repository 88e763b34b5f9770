"""scripts/setup.sh never pulls CUDA packages on a machine without a GPU: its resolved install plan
(`setup.sh --plan`: pip install --dry-run --report, nothing installed) is checked, on this machine's pip sources, with
PyTorch's CPU index reachable (served locally), and with it unreachable and only PyPI's CUDA torch in reach (refused).
The plan reader (scripts/install_plan.py) is tested on small reports."""
from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETUP = ROOT / "scripts" / "setup.sh"
PLAN = ROOT / "scripts" / "install_plan.py"


def _report(*pkgs):
    return {"install": [{"metadata": {"name": n, "version": v}, "download_info": {"url": u}} for n, v, u in pkgs]}


def _plan(tmp_path, report, *args):
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(report))
    return subprocess.run([sys.executable, str(PLAN), str(f), *args], capture_output=True, text=True)


def test_install_plan_flags_cuda_packages_and_cuda_torch(tmp_path):
    cpu = _report(("torch", "2.13.0+cpu", "file:///opt/wheels/torch-2.13.0%2Bcpu-cp311.whl"),
                  ("filelock", "3.0", "https://files.example/filelock.whl"))
    r = _plan(tmp_path, cpu)
    assert r.returncode == 0 and "CUDA packages: none" in r.stdout and "torch 2.13.0+cpu from /opt/wheels" in r.stdout
    assert _plan(tmp_path, cpu, "--torch").stdout.strip() == "2.13.0+cpu"
    for extra in [("nvidia-cudnn-cu13", "9.2", ""), ("triton", "3.7", ""), ("cuda-toolkit", "13.0", "")]:
        r = _plan(tmp_path, _report(("torch", "2.13.0", ""), extra))
        assert r.returncode == 1 and extra[0] in r.stdout
    r = _plan(tmp_path, _report(("torch", "2.13.0+cu130", "")))
    assert r.returncode == 1 and "torch==2.13.0+cu130" in r.stdout


def _setup_plan(env_extra: dict, drop=("PIP_FIND_LINKS",)):
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU machine installs the CUDA build on purpose")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PYTHON=sys.executable, **env_extra)
    r = subprocess.run(["bash", str(SETUP), "--plan", "--dev"], capture_output=True, text=True, env=env, timeout=600)
    if "pip could not resolve" in r.stderr and "CUDA" not in r.stdout:
        pytest.skip(f"no package index reachable here: {r.stderr.strip().splitlines()[-1]}")
    return r


@pytest.mark.slow
def test_setup_plan_on_this_machine_has_no_cuda_package():
    r = _setup_plan({}, drop=())
    assert r.returncode == 0, r.stdout + r.stderr
    plans = [ln for ln in r.stdout.splitlines() if "package(s) to install" in ln]
    assert len(plans) >= 2 and all("CUDA packages: none" in ln for ln in plans), r.stdout
    assert "+cpu" in r.stdout and "nvidia" not in r.stdout


@pytest.mark.slow
def test_setup_refuses_a_cuda_plan_when_the_cpu_index_is_unreachable():
    # pip's own sources reduced to its default index (PyPI: CUDA torch on Linux x86_64); the CPU index refused
    r = _setup_plan({"PIP_CONFIG_FILE": os.devnull, "SPOTVIZ_TORCH_INDEX": "http://127.0.0.1:9/"})
    assert "CPU wheel index cannot be reached" in r.stdout
    if "CUDA packages: none" in r.stdout:
        pytest.skip("the default index here serves a CPU torch: nothing to refuse")
    assert r.returncode == 1 and "would pull the CUDA build" in r.stderr and "nothing installed" not in r.stdout


@contextlib.contextmanager
def _serve(folder: Path):
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(folder), **k)  # noqa: E731
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/"
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.slow
def test_setup_takes_torch_from_the_cpu_index_when_it_answers(tmp_path):
    found = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed",
                            "--no-index", "--no-deps", "--report", "-", "torch==2.13.0"], capture_output=True, text=True)
    urls = [i["download_info"]["url"] for i in json.loads(found.stdout or "{}").get("install", [])]
    if not urls or not urls[0].startswith("file://") or "%2Bcpu" not in urls[0]:
        pytest.skip("no CPU wheel of torch in pip's find-links here to serve as PyTorch's CPU index")
    from urllib.parse import unquote, urlsplit

    wheel = Path(unquote(urlsplit(urls[0]).path))
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / wheel.name).symlink_to(wheel)
    (tmp_path / "empty").mkdir()
    with _serve(tmp_path) as index:  # the CPU index holds torch only; its dependencies come from pip's config
        r = _setup_plan({"SPOTVIZ_TORCH_INDEX": index, "PIP_FIND_LINKS": str(tmp_path / "empty")})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "from PyTorch's CPU wheel index" in r.stdout and "torch 2.13.0+cpu from 127.0.0.1" in r.stdout
    assert "nvidia" not in r.stdout
