"""Benchmark the app on this machine (prints figures; not a timed test).

    python scripts/bench_app.py [--model shakespeare-bd] [--drafter auto] [--gen-length 128] [--threads 1]

1. first streamed update after Run (through the app's API, gradio_client, on a local port): the first update
   (status + empty canvas) and the first update that shows a committed token;
2. time to build the three figures (commit order, draft tree, speed-up) of a 128-token trace;
3. in headless Chromium: the page renders that trace (upload -> all three players drawn) and plays it
   (▶ Play pressed on all three players at once -> all at their last frame).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pick_drafter(target, wanted: str) -> str:
    from spotviz.engine import decode
    from spotviz.samplers.common import DecodeConfig

    order = ["spot", "training-free", "calibrated", "none"] if wanted == "auto" else [wanted]
    for d in order:
        try:
            decode(target, "ROMEO.\n", DecodeConfig(gen_length=8, drafter=d, budget=4))
            return d
        except Exception as e:  # noqa: BLE001
            print(f"  drafter {d!r} unavailable: {e}", file=sys.stderr)
    raise SystemExit("no drafter works for this model")


def _plays(pg, ids) -> dict:
    return pg.evaluate(f"() => Object.fromEntries({list(ids)!r}.map((id) => "
                       "[id, +document.querySelector('#' + id + ' .svp').dataset.plays]))")


def _play(pg, ids) -> float:
    """Press ▶ Play on the players `ids` at once; seconds until every one of them rests on its last frame."""
    before = _plays(pg, ids)
    t0 = time.perf_counter()
    pg.evaluate(f"""() => {{ for (const id of {list(ids)!r})
        document.querySelector('#' + id + ' .updatemenu-button').dispatchEvent(
            new MouseEvent('click', {{bubbles: true}})); }}""")
    pg.wait_for_function(f"""() => Object.entries({json.dumps(before)}).every(([id, n]) => {{
        const r = document.querySelector('#' + id + ' .svp');
        return +r.dataset.plays > n && r.dataset.playing === '0' && +r.dataset.frame === +r.dataset.nframes - 1;
    }})""", timeout=120_000)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="shakespeare-bd", help="model name or folder (default: shakespeare-bd)")
    ap.add_argument("--drafter", default="auto", help="drafter to run (default: the first that works of spot, "
                                                      "training-free, calibrated, none)")
    ap.add_argument("--prompt", default="ROMEO.\n")
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
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
    from spotviz.views import all_figures
    from spotviz.views.speedup import frame_passes

    res: dict = {"model": a.model, "gen_length": a.gen_length, "threads": torch.get_num_threads(),
                 "cpu_count": os.cpu_count()}
    t0 = time.perf_counter()
    target = load_target(a.model)
    res["model_load_s"] = time.perf_counter() - t0
    drafter = pick_drafter(target, a.drafter)
    res["drafter"] = drafter
    print(f"model {target.info.name} ({target.device}), drafter {drafter}, {a.gen_length} tokens, "
          f"torch threads {torch.get_num_threads()}")

    demo = build_app(loader=lambda name: target, models=[a.model], default_model=a.model)
    _, url, _ = launch(demo, server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                       quiet=True)
    client = Client(url, verbose=False)

    # ---------------------------------------------------------------- 1. first streamed update after Run
    firsts, first_tokens, totals, files = [], [], [], None
    for _ in range(a.repeats):
        t_run = time.perf_counter()
        job = client.submit(prompt=a.prompt, model=a.model, mode="exact", tau=0.9, temperature=0.0, seed=0,
                            gen_length=a.gen_length, drafter=drafter, budget=a.budget, coupled=True,
                            api_name="/run")
        t_first = t_tok = None
        last = None
        for out in job:
            now = time.perf_counter() - t_run
            if t_first is None:
                t_first = now
            if t_tok is None and isinstance(out[1], str) and "data-pass=" in out[1]:
                t_tok = now
            last = out
        totals.append(time.perf_counter() - t_run)
        firsts.append(t_first)
        first_tokens.append(t_tok if t_tok is not None else float("nan"))
        files = last[7]
    res["first_update_s"] = statistics.median(firsts)
    res["first_token_update_s"] = statistics.median(first_tokens)
    res["run_total_s"] = statistics.median(totals)
    print(f"1. first streamed update after Run: {res['first_update_s'] * 1e3:.0f} ms "
          f"(first committed token on the canvas: {res['first_token_update_s'] * 1e3:.0f} ms; "
          f"whole run incl. the standard decoder: {res['run_total_s']:.2f} s; median of {a.repeats})")

    # ---------------------------------------------------------------- 2. figures of a 128-token trace
    traces = [Trace.load(f) for f in files]
    main_t = next(t for t in traces if t.meta.drafter == drafter)
    base_t = next((t for t in traces if t.meta.drafter == "none" and t is not main_t), None)
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        figs = all_figures(main_t, base_t)
        times.append(time.perf_counter() - t0)
    res["figures_s"] = statistics.median(times)
    res["figures_json_bytes"] = len(json.dumps(figs))
    res["passes"] = len(main_t.passes)
    res["baseline_passes"] = len(base_t.passes) if base_t else None
    print(f"2. figures of the {main_t.counters.generated_tokens}-token trace ({len(main_t.passes)} passes"
          + (f", standard {len(base_t.passes)}" if base_t else "") + f"): {res['figures_s'] * 1e3:.1f} ms "
          f"(median of 7; {res['figures_json_bytes'] / 1e3:.0f} kB of JSON)")

    # ---------------------------------------------------------------- 3. render and play in Chromium
    if not a.no_browser:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=a.chromium, args=CHROMIUM_ARGS)
            pg = b.new_page(viewport={"width": 1400, "height": 1600})
            t0 = time.perf_counter()
            pg.goto(url)
            pg.wait_for_function("() => window.Plotly !== undefined && document.querySelector('#sv-run')",
                                 timeout=120_000)
            res["page_load_s"] = time.perf_counter() - t0
            pg.wait_for_timeout(1500)  # let the page settle (the example trace it may load at start)
            n_main = len(main_t.passes)
            n_speed = len(frame_passes(n_main, max(n_main, len(base_t.passes) if base_t else 0)))
            t0 = time.perf_counter()
            pg.set_input_files("#sv-upload input[type=file]", files)
            pg.wait_for_function(f"""() => {{
                const ok = (id, n) => {{ const r = document.querySelector('#' + id + ' .svp');
                                        return r.dataset.ready === '1' && +r.dataset.nframes === n; }};
                return ok('sv-order', {n_main}) && ok('sv-tree', {n_main}) && ok('sv-speedup', {n_speed});
            }}""", timeout=120_000)
            res["render_s"] = time.perf_counter() - t0
            for pid in ("sv-order", "sv-tree", "sv-speedup"):  # one view at a time
                res[f"play_{pid[3:]}_s"] = _play(pg, [pid])
            res["play_all_s"] = _play(pg, ["sv-order", "sv-tree", "sv-speedup"])
            b.close()
        print(f"3. Chromium: page load {res['page_load_s']:.2f} s; the trace renders (upload -> 3 players drawn) "
              f"in {res['render_s']:.2f} s; ▶ Play to the last frame: commit order {res['play_order_s']:.2f} s "
              f"({n_main} frames), draft tree {res['play_tree_s']:.2f} s ({n_main}), speed-up "
              f"{res['play_speedup_s']:.2f} s ({n_speed}); all three at once {res['play_all_s']:.2f} s")
        worst = max(res["play_order_s"], res["play_tree_s"], res["play_speedup_s"])
        print(f"   render + play (slowest view): {res['render_s'] + worst:.2f} s; "
              f"render + all three playing at once: {res['render_s'] + res['play_all_s']:.2f} s")
    demo.close()
    if a.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
