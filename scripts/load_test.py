"""Load test of the app: concurrent gradio_client sessions on a loopback port (issue 5, concurrency and load).

    python scripts/load_test.py                          # a micro model trained here in seconds (injected loader)
    python scripts/load_test.py --model assets/models/shakespeare-bd --gen-length 32
    python scripts/load_test.py --sessions 16 --rounds 2 --concurrency 2 --json

What it does, all on 127.0.0.1 (other addresses are refused):
1. starts the app (spotviz.ui.app.build_app with the model injected through `loader`) on a free port;
2. runs `--rounds` rounds of `--sessions` concurrent gradio_client sessions (one Client each), every session with
   its own prompt (a unique marker such as "[s07]") and seed, at temperature 1 so that seeds matter; checks that
   every session streamed several updates, that none of its updates carries another session's marker, and that
   its final traces (drafter run and standard run, read back from the downloaded files) equal a direct engine run
   with the same settings (tokens, text, every pass's commits and tree sizes, counters except timings);
3. fills the waiting line of a second app (a slowed model, `--overflow-queue` places) with more jobs than it
   admits and checks that the extra ones are refused with Gradio's "queue full" answer (HTTP 503: the browser
   says "This application is currently busy. Please try again."), while the admitted ones finish;
4. reports requests, failures, latency p50/p95 (submit -> final result) and of the first streamed update, and the
   process RSS before the first round and after each round (memory must not grow with the number of requests).

Exit code 0 when every check passes, 1 otherwise. `--json` prints the report as one JSON object.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MODEL = "load-test-model"
SLOW_MODEL = "load-test-slow"
TIMING_FIELDS = ("wall_s", "tokens_per_s")


def rss_mb() -> float:
    """Resident set size of this process (server and clients), MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def check_loopback(host: str) -> str:
    if host == "localhost":
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise SystemExit(f"error: the load test only runs on a loopback address (127.0.0.1, ::1), not {host!r}")


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def train_micro_model(folder: Path) -> Path:
    """A micro masked-diffusion model (hidden 64, 2 layers, context 64), trained for a few seconds."""
    from spotviz.training.target import TrainTargetConfig, train_target

    cfg = TrainTargetConfig(out=str(folder), attention="block", vocab_size=300, hidden_size=64, num_hidden_layers=2,
                            num_attention_heads=4, intermediate_size=128, block_size=16, seq_len=64, batch_size=4,
                            max_steps=40, warmup_steps=5, eval_every=10_000, checkpoint_every=10_000,
                            corpus_fraction=0.03, seed=0, save_dtype="float32")
    train_target(cfg, log=lambda *a, **k: None)
    return folder / "final"


class SlowTarget:
    """Every target pass takes at least `delay` seconds (keeps jobs in the queue long enough to fill it)."""

    def __init__(self, inner, delay: float):
        self._inner, self._delay = inner, delay

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def forward(self, *args, **kwargs):
        time.sleep(self._delay)
        return self._inner.forward(*args, **kwargs)


def start_app(targets: dict, host: str, concurrency: int, max_queue: int, trace_dir: Path,
              state_sessions: int | None = None):
    from spotviz.registry import ModelLoadError
    from spotviz.ui.app import build_app, launch

    def loader(name):
        if name in targets:
            return targets[name]
        raise ModelLoadError(f"model {name!r} is not part of this load test")

    names = list(targets)
    demo = build_app(loader=loader, models=names, default_model=names[0], trace_dir=trace_dir, gpu=False,
                     concurrency=concurrency, max_queue=max_queue)
    extra = {"state_session_capacity": state_sessions} if state_sessions else {}
    _, url, _ = launch(demo, server_name=host, server_port=free_port(host), prevent_thread_lock=True, quiet=True,
                       **extra)
    return demo, url


def session_prompt(i: int) -> str:
    return f"ROMEO.\n[s{i:02d}] O"


def run_args(prompt: str, seed: int, a, model: str = MODEL) -> dict:
    return dict(prompt=prompt, model=model, mode="exact", tau=0.9, temperature=a.temperature, seed=seed,
                gen_length=a.gen_length, drafter=a.drafter, budget=a.budget, coupled=True, api_name="/run")


def reference(target, prompt: str, seed: int, a) -> dict:
    """Direct engine runs with the session's settings: {drafter: Trace}."""
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig

    out = {}
    for drafter in dict.fromkeys([a.drafter, "none"]):
        cfg = DecodeConfig(mode="exact", temperature=a.temperature, seed=seed, gen_length=a.gen_length,
                           drafter=drafter, budget=a.budget)
        out[drafter] = decode(target, prompt, cfg)
    return out


def compare(got, want) -> list[str]:
    """Differences between a trace from the app and the direct engine run (timings excluded)."""
    errs = []
    if got.meta.prompt != want.meta.prompt or got.meta.seed != want.meta.seed:
        errs.append(f"trace belongs to another request (prompt {got.meta.prompt!r}, seed {got.meta.seed})")
    if got.tokens != want.tokens or got.text != want.text:
        errs.append("generated tokens differ from the direct engine run")
    gp = [[(c.position, c.token, c.step, c.drafted) for c in p.commits] for p in got.passes]
    wp = [[(c.position, c.token, c.step, c.drafted) for c in p.commits] for p in want.passes]
    if gp != wp:
        errs.append("pass records (commits) differ from the direct engine run")
    if [len(p.tree) for p in got.passes] != [len(p.tree) for p in want.passes] or \
            [p.accepted_path for p in got.passes] != [p.accepted_path for p in want.passes]:
        errs.append("draft trees differ from the direct engine run")
    for f in ("target_passes", "commits", "generated_tokens", "drafted_nodes", "accepted_drafts",
              "mean_accepted_length", "acceptance_per_depth"):
        if getattr(got.counters, f) != getattr(want.counters, f):
            errs.append(f"counter {f}: {getattr(got.counters, f)} != {getattr(want.counters, f)}")
    return errs


def one_session(url: str, i: int, seed: int, a, refs: dict, markers: list[str]) -> dict:
    """One gradio_client session: submit, stream, check. Returns timings and problems."""
    from gradio_client import Client

    from spotviz.trace import Trace

    prompt = session_prompt(i)
    own = markers[i]
    res = {"session": i, "seed": seed, "errors": [], "updates": 0, "latency_s": None, "first_update_s": None}
    client = None
    try:
        client = Client(url, verbose=False)
        t0 = time.perf_counter()
        job = client.submit(**run_args(prompt, seed, a))
        final = None
        for upd in job:
            if res["first_update_s"] is None:
                res["first_update_s"] = time.perf_counter() - t0
            res["updates"] += 1
            blob = json.dumps(upd, default=str)
            leaked = [m for m in markers if m != own and m in blob]
            if leaked:
                res["errors"].append(f"an update carries other sessions' data: {leaked[:3]}")
            final = upd
        final = job.result() or final
        res["latency_s"] = time.perf_counter() - t0
        status = final[0] if final else ""
        if "Done" not in str(status):
            res["errors"].append(f"final status is not Done: {str(status)[:300]}")
            return res
        if own not in json.dumps(final[1], default=str):
            res["errors"].append("the final timeline does not show this session's prompt")
        files = final[2] or []  # outputs of /run: status, explainer timeline, trace files (+ the figures page)
        traces = {}
        for f in (f for f in files if str(f).endswith(".json")):
            t = Trace.load(f)
            traces[t.meta.drafter] = t
        if set(traces) != set(refs):
            res["errors"].append(f"expected traces for {sorted(refs)}, got {sorted(traces)}")
        for name, want in refs.items():
            if name in traces:
                res["errors"] += [f"{name} run: {e}" for e in compare(traces[name], want)]
        res["files"] = sorted(str(f) for f in files if str(f).endswith(".json"))  # the traces
        if sum(str(f).endswith(".html") for f in files) != 1:
            res["errors"].append("expected one page of the run's figures (.html) next to the traces")
        if res["updates"] < 3:
            res["errors"].append(f"only {res['updates']} streamed updates")
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        res["errors"].append(f"{type(e).__name__}: {e}")
    finally:
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001
                pass
    return res


def round_of_sessions(url: str, a, refs: dict, seeds: list[int]) -> list[dict]:
    markers = [f"[s{i:02d}]" for i in range(a.sessions)]
    barrier = threading.Barrier(a.sessions)

    def go(i):
        try:
            barrier.wait(timeout=120)  # all sessions submit together
        except threading.BrokenBarrierError:
            pass
        return one_session(url, i, seeds[i], a, refs[i], markers)

    with ThreadPoolExecutor(max_workers=a.sessions) as ex:
        return list(ex.map(go, range(a.sessions)))


def overflow(a, target, host: str, trace_dir: Path) -> dict:
    """More jobs than the waiting line admits, on an app with a slowed model: the extra ones are refused."""
    import httpx
    from gradio_client import Client
    from gradio_client.utils import QueueError, Status

    slow = SlowTarget(target, a.slow_delay)
    demo, url = start_app({SLOW_MODEL: slow}, host, 1, a.overflow_queue, trace_dir)
    out = {"max_queue": a.overflow_queue, "concurrency": 1, "submitted": 0, "accepted": 0, "refused": 0,
           "busy_message": None, "server_answer": None, "admitted_finished": 0, "errors": []}
    clients, jobs = [], []
    try:
        n = a.overflow_queue + 1 + a.overflow_extra
        client = Client(url, verbose=False)
        clients.append(client)
        for i in range(n):
            out["submitted"] += 1
            try:
                job = client.submit(**run_args(f"ROMEO.\n[q{i:02d}] O", i, a, SLOW_MODEL) | {"drafter": "none"})
                jobs.append(job)
            except QueueError as e:
                out["refused"] += 1
                out["busy_message"] = str(e)
            if i == 0:
                time.sleep(0.5)  # the first job leaves the waiting line and starts decoding
        # jobs are submitted in the background by the client: wait until each has been answered
        for job in jobs:
            try:
                job.result(timeout=a.timeout)
                out["admitted_finished"] += 1
            except QueueError as e:
                out["refused"] += 1
                out["busy_message"] = str(e)
            except Exception as e:  # noqa: BLE001
                if "queue" in str(e).lower() and "full" in str(e).lower():
                    out["refused"] += 1
                    out["busy_message"] = str(e)
                else:
                    out["errors"].append(f"{type(e).__name__}: {e}")
        out["accepted"] = out["submitted"] - out["refused"]
        # the server's own answer when the line is full (what the browser turns into "currently busy")
        fill = [client.submit(**run_args(f"ROMEO.\n[f{i:02d}] O", i, a, SLOW_MODEL) | {"drafter": "none"})
                for i in range(a.overflow_queue + 1)]
        # (the client joins in the background: probe once the server has placed every fill job, which on a busy
        # machine takes more than the second that used to be waited here)
        placed = {Status.IN_QUEUE, Status.SENDING_DATA, Status.PROCESSING, Status.ITERATING, Status.PROGRESS,
                  Status.FINISHED, Status.QUEUE_FULL}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(job.status().code in placed for job in fill):
            time.sleep(0.1)
        time.sleep(0.2)
        fn_index = next(d["id"] for d in demo.get_config_file()["dependencies"] if d.get("api_name") == "run")
        data = [session_prompt(0), SLOW_MODEL, "exact", 0.9, 0.0, 0, a.gen_length, "none", a.budget, True]
        # (a fill job may start or be refused before the probe; each probe the line still admits fills it further,
        # so the line is full after at most max_queue + 1 probes)
        for i in range(a.overflow_queue + 2):
            r = httpx.post(url.rstrip("/") + "/gradio_api/queue/join", timeout=30,
                           json={"data": data, "fn_index": fn_index, "session_hash": f"loadtestprobe{i}"})
            out["server_answer"] = f"HTTP {r.status_code}: {r.json().get('detail', r.text)[:200]}"
            if r.status_code == 503:
                break
        for job in fill:
            job.cancel()
    finally:
        for c in clients:
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass
        demo.close()
    if out["refused"] < 1:
        out["errors"].append("no job was refused although more were submitted than the queue admits")
    if out["accepted"] > a.overflow_queue + 1:
        out["errors"].append(f"{out['accepted']} jobs admitted; the queue admits at most {a.overflow_queue} + 1 running")
    if out["admitted_finished"] != out["accepted"]:
        out["errors"].append(f"only {out['admitted_finished']} of {out['accepted']} admitted jobs finished")
    if not (out["server_answer"] or "").startswith("HTTP 503"):
        out["errors"].append(f"a full queue answered {out['server_answer']!r}, expected HTTP 503")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="a model folder (default: train a micro model here, ~5 s)")
    ap.add_argument("--host", default="127.0.0.1", help="loopback only")
    ap.add_argument("--sessions", type=int, default=16, help="concurrent gradio_client sessions per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--gen-length", type=int, default=24)
    ap.add_argument("--drafter", default="training-free", help="the drafter of every session (none: standard only)")
    ap.add_argument("--budget", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=1, help="decodes at a time (the app: 1 on CPU, 2 on GPU)")
    ap.add_argument("--max-queue", type=int, default=32, help="waiting line of the main app")
    ap.add_argument("--overflow-queue", type=int, default=4, help="waiting line of the overflow app (0: skip)")
    ap.add_argument("--overflow-extra", type=int, default=3, help="jobs submitted beyond what it admits")
    ap.add_argument("--slow-delay", type=float, default=0.1, help="seconds per target pass in the overflow app")
    ap.add_argument("--max-rss-growth-mb", type=float, default=150.0,
                    help="fail if RSS grows more than this from the end of round 1 to the end of the last round")
    ap.add_argument("--state-sessions", type=int, default=None,
                    help="sessions the server keeps in memory (default: the app's, spotviz.ui.app.STATE_SESSIONS)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    host = check_loopback(a.host)
    if a.sessions < 1 or a.rounds < 1:
        raise SystemExit("error: --sessions and --rounds must be at least 1")
    import torch

    torch.set_num_threads(max(1, a.threads))
    from spotviz.registry import load_target

    log = (lambda *x: print(*x, file=sys.stderr, flush=True)) if a.json else (lambda *x: print(*x, flush=True))
    tmp = tempfile.TemporaryDirectory(prefix="spotviz-load-")
    folder = a.model or train_micro_model(Path(tmp.name) / "micro")
    target = load_target(str(folder), device="cpu")
    trace_dir = Path(tmp.name) / "no-examples"
    log(f"model {target.info.name} (context {target.info.max_length}); {a.sessions} sessions x {a.rounds} rounds, "
        f"gen {a.gen_length}, drafter {a.drafter}, concurrency {a.concurrency}, queue {a.max_queue}")

    seeds = [[1000 * r + 7 * i + 1 for i in range(a.sessions)] for r in range(a.rounds)]
    t0 = time.perf_counter()
    refs = [[reference(target, session_prompt(i), seeds[r][i], a) for i in range(a.sessions)] for r in range(a.rounds)]
    log(f"direct engine references: {time.perf_counter() - t0:.1f} s")

    report = {"sessions": a.sessions, "rounds": a.rounds, "gen_length": a.gen_length, "drafter": a.drafter,
              "concurrency": a.concurrency, "max_queue": a.max_queue, "host": host}
    demo, url = start_app({MODEL: target}, host, a.concurrency, a.max_queue, trace_dir, a.state_sessions)
    results, rss = [], {"before": rss_mb(), "after_round": []}
    try:
        for r in range(a.rounds):
            t0 = time.perf_counter()
            res = round_of_sessions(url, a, refs[r], seeds[r])
            results += res
            rss["after_round"].append(rss_mb())
            log(f"round {r + 1}: {sum(not x['errors'] for x in res)}/{len(res)} ok in {time.perf_counter() - t0:.1f} s, "
                f"RSS {rss['after_round'][-1]:.0f} MB")
    finally:
        demo.close()
    files = [f for x in results for f in x.get("files", [])]
    lat = [x["latency_s"] for x in results if x["latency_s"] is not None]
    first = [x["first_update_s"] for x in results if x["first_update_s"] is not None]
    failures = [x for x in results if x["errors"]]
    report.update({
        "requests": len(results), "failures": len(failures),
        "failure_details": [{"session": x["session"], "errors": x["errors"][:5]} for x in failures][:10],
        "latency_p50_s": percentile(lat, 0.5), "latency_p95_s": percentile(lat, 0.95),
        "latency_max_s": max(lat) if lat else float("nan"),
        "first_update_p50_s": percentile(first, 0.5), "first_update_p95_s": percentile(first, 0.95),
        "updates_per_request_min": min((x["updates"] for x in results), default=0),
        "distinct_trace_files": len(set(files)), "trace_files": len(files),
        "rss_before_mb": round(rss["before"], 1), "rss_after_round_mb": [round(v, 1) for v in rss["after_round"]],
    })
    problems = [f"{len(failures)} of {len(results)} requests failed"] if failures else []
    if len(set(files)) != len(files):
        problems.append("two sessions were given the same trace file")
    growth = rss["after_round"][-1] - rss["after_round"][0]
    report["rss_growth_after_round1_mb"] = round(growth, 1)
    if a.rounds > 1 and growth > a.max_rss_growth_mb:
        problems.append(f"RSS grew {growth:.0f} MB between round 1 and round {a.rounds}")
    if a.overflow_queue > 0:
        ov = overflow(a, target, host, trace_dir)
        report["overflow"] = ov
        problems += [f"overflow: {e}" for e in ov["errors"]]
    report["problems"] = problems
    report["ok"] = not problems
    if a.json:
        print(json.dumps(report))
    else:
        print(f"requests {report['requests']}  failures {report['failures']}  "
              f"latency p50 {report['latency_p50_s']:.2f} s  p95 {report['latency_p95_s']:.2f} s  "
              f"(first update p50 {report['first_update_p50_s']:.2f} s, p95 {report['first_update_p95_s']:.2f} s)")
        print(f"RSS before {report['rss_before_mb']} MB, after each round {report['rss_after_round_mb']} MB")
        if "overflow" in report:
            ov = report["overflow"]
            print(f"queue bound: {ov['submitted']} submitted to a line of {ov['max_queue']} (+1 running): "
                  f"{ov['accepted']} admitted ({ov['admitted_finished']} finished), {ov['refused']} refused "
                  f"with {ov['busy_message']!r}; server: {ov['server_answer']}")
        for x in report["failure_details"]:
            print(f"  session {x['session']}: {'; '.join(x['errors'])}")
        print("OK" if report["ok"] else "FAILED: " + "; ".join(problems))
    tmp.cleanup()
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
