"""Benchmark the app on this machine (prints figures; not a timed test).

    python scripts/bench_app.py [--model shakespeare-bd] [--drafter auto] [--gen-length 128] [--threads 1]

1. through the app's API (gradio_client, local port): the first streamed update after Run and the first one
   that carries a decoded pass;
2. the timeline (spotviz.views.timeline) of a finished run with its standard-decoder comparison: build time
   and size;
3. in headless Chromium (1400x1000), with a long-task observer (PerformanceObserver 'longtask': main-thread
   blocks of 50 ms or more):
   a. time to interactive: navigation start -> the example plays by itself, and a click on the pass stepper
      answered (the page reacts to input while the example plays);
   b. a live run of --gen-length tokens (drafter run, then the standard decoder): the share of the run's
      duration the main thread was blocked, and the longest block (median of --repeats); and, from a Chrome
      trace of the run, the CPU time the main thread really ran (a long task is wall time: on a loaded machine
      it also counts the time the operating system gave the CPU to others, e.g. the app's own decoder);
   c. Stop (in runs of --stop-gen-length tokens): click -> the page shows its final stopped state (views and
      status), and the views stay unchanged afterwards;
   d. a replay: upload the run's traces -> every view drawn.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
EXPLAINER = "#sv-explainer .sve"
LONG_TASKS = """window.__lt = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__lt.push([e.startTime, e.duration]); })
  .observe({type: 'longtask', buffered: true});"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pick_drafter(target, wanted: str) -> str:
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig

    order = ["spot", "training-free", "calibrated", "none"] if wanted == "auto" else [wanted]
    for d in order:
        try:
            decode(target, "ROMEO.\n", DecodeConfig(gen_length=8, drafter=d, budget=4))
            return d
        except Exception as e:  # noqa: BLE001
            print(f"  drafter {d!r} unavailable: {e}", file=sys.stderr)
    raise SystemExit("no drafter works for this model")


def blocked(pg, t0: float, t1: float) -> tuple[float, float]:
    """(ms blocked, longest block in ms) of the long tasks that started in [t0, t1] (page clock, ms)."""
    tasks = [(s, d) for s, d in pg.evaluate("() => window.__lt") if t0 <= s <= t1]
    return sum(d for _, d in tasks), max((d for _, d in tasks), default=0.0)


def main_thread_cpu_ms(trace_path: Path) -> float:
    """CPU ms of the renderer main thread's top-level tasks in a Chrome trace."""
    events = json.loads(trace_path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    mains = {(e["pid"], e["tid"]) for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e["args"].get("name") == "CrRendererMain"}
    tasks = sorted((e for e in events if (e.get("pid"), e.get("tid")) in mains and e.get("ph") == "X"
                    and e.get("name") in ("RunTask", "ThreadControllerImpl::RunTask") and "dur" in e),
                   key=lambda e: e["ts"])
    cpu, end = 0.0, -1.0
    for e in tasks:  # top-level tasks only (a nested RunTask lies inside the one before)
        if e["ts"] >= end:
            cpu += e.get("tdur", e["dur"]) / 1e3
            end = e["ts"] + e["dur"]
    return cpu


def ex(pg) -> dict:
    return pg.evaluate(f"() => Object.assign({{}}, document.querySelector('{EXPLAINER}').dataset)")


def set_controls(pg, gen_length: int, drafter: str, prompt: str) -> None:
    pg.fill("#sv-prompt textarea", prompt)
    pg.click("#sv-drafter input")
    pg.click(f'#sv-drafter li[aria-label="{drafter}"]')
    box = pg.locator("#sv-gen-length input[type=number]")
    box.fill(str(gen_length))
    box.press("Enter")
    box.blur()
    pg.wait_for_timeout(300)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="shakespeare-bd", help="model name or folder (default: shakespeare-bd)")
    ap.add_argument("--drafter", default="auto", help="drafter to run (default: the first that works of spot, "
                                                      "training-free, calibrated, none)")
    ap.add_argument("--prompt", default="ROMEO.\n")
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--stop-gen-length", type=int, default=224, help="tokens of the runs that Stop interrupts")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chromium", default=os.environ.get("SPOTVIZ_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--json", action="store_true", help="also print the results as one JSON object")
    a = ap.parse_args()

    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    from gradio_client import Client

    from spotviz.registry import load_target
    from spotviz.trace import Trace
    from spotviz.ui.app import build_app, launch
    from spotviz.views.timeline import timeline

    res: dict = {"model": a.model, "gen_length": a.gen_length, "threads": torch.get_num_threads(),
                 "cpu_count": os.cpu_count()}
    t0 = time.perf_counter()
    target = load_target(a.model)
    res["model_load_s"] = time.perf_counter() - t0
    drafter = pick_drafter(target, a.drafter)
    res["drafter"] = drafter
    print(f"model {target.info.name} ({target.device}), drafter {drafter}, {a.gen_length} tokens, "
          f"torch threads {torch.get_num_threads()}, {os.cpu_count()} CPUs")

    demo = build_app(loader=lambda name: target, models=[a.model], default_model=a.model)
    _, url, _ = launch(demo, server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                       quiet=True)
    client = Client(url, verbose=False)

    # ---------------------------------------------------------------- 1. first streamed update after Run
    firsts, first_passes, totals, updates, files = [], [], [], [], None
    for _ in range(a.repeats):
        t_run = time.perf_counter()
        job = client.submit(prompt=a.prompt, model=a.model, mode="exact", tau=0.9, temperature=0.0, seed=0,
                            gen_length=a.gen_length, drafter=drafter, budget=a.budget, coupled=True,
                            api_name="/run")
        t_first = t_pass = None
        last, n = None, 0
        for out in job:
            now = time.perf_counter() - t_run
            n += 1
            t_first = now if t_first is None else t_first
            if t_pass is None and isinstance(out[1], str) and '"t":"pass"' in out[1]:
                t_pass = now
            last = out
        totals.append(time.perf_counter() - t_run)
        firsts.append(t_first)
        first_passes.append(t_pass if t_pass is not None else float("nan"))
        updates.append(n)
        files = last[2]
    res["first_update_s"] = statistics.median(firsts)
    res["first_pass_update_s"] = statistics.median(first_passes)
    res["run_total_s"] = statistics.median(totals)
    res["streamed_updates"] = statistics.median(updates)
    print(f"1. API: first streamed update {res['first_update_s'] * 1e3:.0f} ms, first decoded pass "
          f"{res['first_pass_update_s'] * 1e3:.0f} ms; whole run incl. the standard decoder "
          f"{res['run_total_s']:.2f} s in {res['streamed_updates']:.0f} updates (median of {a.repeats})")

    # ---------------------------------------------------------------- 2. the timeline of the finished run
    traces = [Trace.load(f) for f in files if str(f).endswith(".json")]  # the downloads also hold the .html page
    main_t = next(t for t in traces if t.meta.drafter == drafter)
    base_t = next((t for t in traces if t.meta.drafter == "none" and t is not main_t), None)
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        text = timeline(main_t, base_t)
        times.append(time.perf_counter() - t0)
    res["timeline_s"] = statistics.median(times)
    res["timeline_bytes"] = len(text.encode())
    res["passes"] = len(main_t.passes)
    res["baseline_passes"] = len(base_t.passes) if base_t else None
    print(f"2. timeline of the {main_t.counters.generated_tokens}-token run ({len(main_t.passes)} passes"
          + (f", standard {len(base_t.passes)}" if base_t else "") + f"): {res['timeline_s'] * 1e3:.1f} ms, "
          f"{res['timeline_bytes'] / 1e3:.0f} kB")

    # ---------------------------------------------------------------- 3. in Chromium
    if not a.no_browser:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=a.chromium, args=CHROMIUM_ARGS)
            pg = b.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            pg.add_init_script(LONG_TASKS)
            # a. time to interactive with the example playing
            pg.goto(url)
            pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}')?.dataset.playing === '1'",
                                 timeout=120_000, polling=20)
            res["example_playing_s"] = pg.evaluate("() => performance.now()") / 1e3
            k = int(ex(pg)["pass"])
            t_click = pg.evaluate("() => performance.now()")
            pg.click(f"{EXPLAINER} .sve-play")  # pause
            pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.playing === '0'",
                                 polling=10)
            res["interactive_s"] = pg.evaluate("() => performance.now()") / 1e3
            res["click_answer_ms"] = res["interactive_s"] * 1e3 - t_click
            ms, longest = blocked(pg, 0, res["interactive_s"] * 1e3)
            print(f"3a. time to interactive: the example plays {res['example_playing_s']:.2f} s after navigation "
                  f"start; a click on ❚❚ answered at {res['interactive_s']:.2f} s ({res['click_answer_ms']:.0f} ms "
                  f"after the click, at pass {k}); long tasks until then {ms:.0f} ms (longest {longest:.0f} ms)")
            # b. live runs
            set_controls(pg, a.gen_length, drafter, a.prompt)
            runs = []
            for _ in range(a.repeats):
                session = ex(pg)["session"]
                trace_path = Path(tempfile.mkdtemp()) / "trace.json"
                b.start_tracing(page=pg, path=str(trace_path), categories=["toplevel", "disabled-by-default-devtools.timeline"])
                t_start = pg.evaluate("() => performance.now()")
                pg.click("#sv-run")
                pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
                    return r.dataset.session !== '{session}' && r.dataset.state === 'done'; }}""",
                                     timeout=300_000, polling=50)
                t_end = pg.evaluate("() => performance.now()")
                b.stop_tracing()
                cpu_ms = main_thread_cpu_ms(trace_path)
                ms, longest = blocked(pg, t_start, t_end)
                runs.append({"run_s": (t_end - t_start) / 1e3, "blocked_ms": ms, "blocked_pct": 100 * ms / (t_end - t_start),
                             "longest_ms": longest, "paints": int(ex(pg)["renders"]),
                             "main_cpu_pct": 100 * cpu_ms / (t_end - t_start)})
            res["live_runs"] = runs
            res["long_tasks_on_page"] = pg.evaluate("() => window.__lt.length")
            med = {k: statistics.median(r[k] for r in runs) for k in ("run_s", "blocked_pct", "longest_ms", "main_cpu_pct")}
            res.update({"live_" + k: v for k, v in med.items()})
            print(f"3b. live {a.gen_length}-token run (drafter run + standard decoder), {a.repeats} runs: "
                  + "; ".join(f"{r['run_s']:.2f} s, blocked {r['blocked_pct']:.1f}% (longest {r['longest_ms']:.0f} ms,"
                              f" main-thread CPU {r['main_cpu_pct']:.1f}%)" for r in runs)
                  + f" -> median blocked {med['blocked_pct']:.1f}%, longest {max(r['longest_ms'] for r in runs):.0f} ms"
                  + f", main-thread CPU {med['main_cpu_pct']:.1f}% of the run"
                  + f" ({res['long_tasks_on_page']} long tasks on the page since it opened)")
            # c. Stop (in a longer run: on a loaded machine a short one can end before the click is handled)
            set_controls(pg, max(a.gen_length, a.stop_gen_length), drafter, a.prompt)
            stops = []
            for _ in range(a.repeats):
                session = ex(pg)["session"]
                pg.click("#sv-run")
                pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
                    return r.dataset.session !== '{session}' && ((r.dataset.state === 'live' && +r.dataset.npasses >= 2)
                                                                  || r.dataset.state === 'done'); }}""",
                                     timeout=120_000, polling=20)
                # the click as the page gets it (playwright's own actionability checks wait for animation frames,
                # which a loaded machine delays past the end of the run)
                t_stop = pg.evaluate("() => { const t = performance.now(); document.querySelector('#sv-stop').click(); return t; }")
                pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
                    return (r.dataset.state === 'stopped' && document.querySelector('#sv-status').innerText.includes('Stopped'))
                        || r.dataset.state === 'done'; }}""", polling=10, timeout=60_000)
                t_shown = pg.evaluate("() => performance.now()")
                if ex(pg)["state"] == "done":  # the run ended before the click was handled: Stop leaves a finished run
                    stops.append({"stop_ms": None, "stayed_stopped": True, "finished_first": True})
                    continue
                before = pg.inner_html(f"{EXPLAINER} .sve-lanes")
                pg.wait_for_timeout(1500)
                still = pg.inner_html(f"{EXPLAINER} .sve-lanes") == before and "Stopped" in pg.inner_text("#sv-status")
                stops.append({"stop_ms": t_shown - t_stop, "stayed_stopped": still})
            res["stops"] = stops
            timed = [s["stop_ms"] for s in stops if s["stop_ms"] is not None]
            res["stop_ms"] = statistics.median(timed) if timed else None
            print("3c. Stop: " + ", ".join("run finished before the click was handled" if s["stop_ms"] is None else
                                            f"{s['stop_ms']:.0f} ms" + ("" if s["stayed_stopped"] else " (CHANGED after)")
                                            for s in stops)
                  + (f" -> median {res['stop_ms']:.0f} ms" if timed else ""))
            # d. replay
            pg.locator("#sv-replay").get_by_text("Examples, replay and share").click()
            t0 = time.perf_counter()
            pg.set_input_files("#sv-upload input[type=file]", files)
            n = max(len(main_t.passes), len(base_t.passes) if base_t else 0)
            pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.npasses === '{n}' && "
                                 "document.querySelector('#sv-status').innerText.includes('Replaying')",
                                 timeout=120_000, polling=20)
            res["replay_s"] = time.perf_counter() - t0
            print(f"3d. replay of the run's traces (upload -> every view drawn): {res['replay_s']:.2f} s")
            res["console_errors"] = errors
            print(f"console errors: {len(errors)}" + (f" {errors[:3]}" if errors else ""))
            b.close()
    demo.close()
    if a.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
