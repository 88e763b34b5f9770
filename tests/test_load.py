"""The load test (scripts/load_test.py) with small settings: 16 concurrent gradio_client sessions on 127.0.0.1.

The script starts the app with the micro test model, runs the sessions with different prompts and seeds, checks
each session's traces against a direct engine run, fills a small waiting line past its bound, and reports the
figures (requests, failures, p50/p95 latency, RSS); see its docstring. Only loopback addresses are used.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gradio_client")

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "load_test.py"


@pytest.fixture(scope="module")
def load_test():
    spec = importlib.util.spec_from_file_location("spotviz_load_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_load_test_refuses_non_loopback_addresses(load_test):
    for host in ("0.0.0.0", "10.1.2.3", "192.168.0.1", "example.org", "::"):
        with pytest.raises(SystemExit, match="loopback"):
            load_test.check_loopback(host)
    assert load_test.check_loopback("127.0.0.1") == "127.0.0.1"
    assert load_test.check_loopback("::1") == "::1"
    assert load_test.check_loopback("localhost") == "127.0.0.1"


def test_the_checker_notices_another_sessions_trace(load_test, tiny_block_target):
    """compare() must flag a trace that belongs to another request (so a mixed-up session cannot pass)."""
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig

    cfg = dict(temperature=1.0, gen_length=16, drafter="training-free", budget=8)
    mine = decode(tiny_block_target, load_test.session_prompt(1), DecodeConfig(seed=8, **cfg))
    again = decode(tiny_block_target, load_test.session_prompt(1), DecodeConfig(seed=8, **cfg))
    other = decode(tiny_block_target, load_test.session_prompt(2), DecodeConfig(seed=15, **cfg))
    assert load_test.compare(again, mine) == []
    errs = load_test.compare(other, mine)
    assert any("another request" in e for e in errs)
    assert load_test.percentile([1, 2, 3, 4], 0.5) == 2.5


@pytest.mark.slow
def test_sixteen_concurrent_sessions(tiny_block_dir, tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, str(SCRIPT), "--model", str(tiny_block_dir), "--host", "127.0.0.1", "--sessions", "16",
           "--rounds", "1", "--gen-length", "16", "--drafter", "training-free", "--budget", "8",
           "--overflow-queue", "3", "--overflow-extra", "2", "--slow-delay", "0.1", "--timeout", "240", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert r.stdout.strip(), r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    print("\nload test:", json.dumps({k: report[k] for k in (
        "requests", "failures", "latency_p50_s", "latency_p95_s", "first_update_p50_s", "rss_before_mb",
        "rss_after_round_mb")}), "overflow:", {k: report["overflow"][k] for k in (
            "submitted", "accepted", "refused", "busy_message", "server_answer")})
    assert report["ok"], (report["problems"], report.get("failure_details"), r.stderr[-2000:])
    assert r.returncode == 0
    assert report["requests"] == 16 and report["failures"] == 0
    assert report["distinct_trace_files"] == report["trace_files"] == 32  # drafter run + standard run each
    assert report["updates_per_request_min"] >= 3
    assert report["latency_p95_s"] >= report["latency_p50_s"] > 0
    ov = report["overflow"]
    assert ov["refused"] >= 1 and ov["accepted"] <= ov["max_queue"] + 1 == 4
    assert ov["admitted_finished"] == ov["accepted"]
    assert "Queue is full" in ov["busy_message"] and ov["server_answer"].startswith("HTTP 503")
