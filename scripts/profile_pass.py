"""Where a pass's time goes: per-component thread CPU time of standard and SPOT passes, and f(N)/f(1) in real decodes.

    nice -n 10 python scripts/profile_pass.py --model python-bd --prompts 6 --budgets 2,4,8 [--temperature 1]

Every component is timed with time.thread_time() (this thread's CPU time: a busy machine does not inflate it)
and counted exclusively (a component's time excludes the components it calls). A pass's total is the thread time
the decoder spends producing it (one step of the stream), so "overhead" = total - target forward. The target's
forwards are grouped by their batch size N (fused passes, which also evaluate the next window, apart): their mean
over the standard decoder's is f(N)/f(1) as real decodes see it, the figure `cost-curve` must match.
Components are wrapped by name where the code looks them up; a name the code no longer has stops the script
(so a renamed function is never silently left out of the table).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections import defaultdict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import importlib  # noqa: E402

import torch  # noqa: E402

# (module, attribute, label): each wrapped where it is looked up. Several names may share a label.
COMPONENTS = [
    ("spotviz.drafter.numpy_forward", "NumpyDrafter.__call__", "drafter forward"),
    ("spotviz.drafter.proposers.spot", "np_position_features", "features"),
    ("spotviz.drafter.proposers.common", "coupled_candidates", "drafter context"),
    ("spotviz.drafter.proposers.common", "Context.__init__", "drafter context"),
    ("spotviz.samplers.spot", "build_tree", "tree build"),
    ("spotviz.samplers.spot", "node_states", "node states"),
    ("spotviz.samplers.verify", "decide", "decide"),
    ("spotviz.samplers.standard", "decide", "decide"),
    ("spotviz.samplers.spot", "accept_walk", "accept walk + bonus"),
    ("spotviz.samplers.spot", "bonus", "accept walk + bonus"),
    ("spotviz.samplers.spot", "tree_record", "trace record"),
    ("spotviz.samplers.spot", "remember", "known states"),
    ("spotviz.samplers.spot", "window_memory", "known states"),
    ("spotviz.samplers.known_states", "KnownStates.decision", "known states"),
    ("spotviz.samplers.state", "DecodeState.add_pass", "bookkeeping"),
    ("spotviz.samplers.state", "DecodeState.counters", "bookkeeping"),
    ("spotviz.samplers.state", "DecodeState.progress", "bookkeeping"),
    ("spotviz.samplers.state", "DecodeState.apply", "bookkeeping"),
    ("spotviz.samplers.auto_budget", "CostAwareBudget.draft_now", "budget policy"),
    ("spotviz.samplers.auto_budget", "CostAwareBudget.begin", "budget policy"),
    ("spotviz.samplers.auto_budget", "CostAwareBudget.add", "budget policy"),
    ("spotviz.samplers.auto_budget", "CostAwareBudget.stop", "budget policy"),
    ("spotviz.samplers.auto_budget", "CostAwareBudget.choose", "budget policy"),
    ("spotviz.samplers.auto_budget", "CostAwareBudget.observe", "budget policy"),
]


class Profiler:
    """Exclusive thread time per label (a stack subtracts a callee's time from its caller)."""

    def __init__(self):
        self.excl = defaultdict(float)
        self.stack: list[list] = []
        self.on = False

    def wrap(self, fn, label):
        prof = self

        def timed(*a, **k):
            if not prof.on:
                return fn(*a, **k)
            prof.stack.append([time.thread_time(), 0.0])
            try:
                return fn(*a, **k)
            finally:
                t0, child = prof.stack.pop()
                el = time.thread_time() - t0
                prof.excl[label] += el - child
                if prof.stack:
                    prof.stack[-1][1] += el

        timed.__wrapped__ = fn
        return timed

    def install(self):
        for mod_name, attr, label in COMPONENTS:
            mod = importlib.import_module(mod_name)
            owner, name = mod, attr
            if "." in attr:
                cls, name = attr.split(".")
                owner = getattr(mod, cls, None)
            if owner is None or ("." in attr and name not in vars(owner)) or not hasattr(owner, name):
                raise SystemExit(f"profile_pass: {mod_name}.{attr} no longer exists: update COMPONENTS")
            setattr(owner, name, self.wrap(getattr(owner, name), label))


def wrap_forward(target, prof: Profiler, log: list):
    """Time every target forward (exclusive label "target forward"); log (states, fused, seconds)."""
    fwd = target.forward

    def forward(rows, lo, hi, cache):
        t0 = time.thread_time()
        if prof.on:
            prof.stack.append([t0, 0.0])
        out = fwd(rows, lo, hi, cache)
        el = time.thread_time() - t0
        if prof.on:
            prof.stack.pop()
            prof.excl["target forward"] += el
            if prof.stack:
                prof.stack[-1][1] += el
        log.append((int(rows.shape[0]), hi - lo, el))
        return out

    target.forward = forward


def run(stream, prof: Profiler, per_pass: list):
    """Consume a decode stream, timing each step (one pass) in thread time."""
    it = iter(stream)
    prof.on = True
    try:
        while True:
            before = dict(prof.excl)
            t0 = time.thread_time()
            try:
                pr = next(it)
            except StopIteration:
                break
            el = time.thread_time() - t0
            if pr.record is not None:
                comp = {k: v - before.get(k, 0.0) for k, v in prof.excl.items()}
                per_pass.append((pr.record.states, pr.record.kind, el, comp))
    finally:
        prof.on = False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="python-bd")
    ap.add_argument("--prompts", type=int, default=6)
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--budgets", default="2,4,8", help="comma-separated; 'auto' allowed")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--drafter", default="spot")
    ap.add_argument("--mode", default="exact")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--control", action="store_true",
                    help="also time the standard decoder a second time, as a configuration of its own: its per-prompt "
                         "ratios (identical work) show how far this machine's noise alone moves a ratio")
    ap.add_argument("--repeats", type=int, default=1,
                    help="decode every prompt this many times per configuration (interleaved, in an order that "
                         "turns from run to run: a decode right after another decoder's runs 1-2%% slower) and take "
                         "each one's least thread time: a per-prompt ratio then shows the decoders, not the machine's "
                         "noise (the component table is the first repeat's)")
    ap.add_argument("--ratios-only", action="store_true",
                    help="no component timers (they cost time themselves): only each prompt's thread time, standard "
                         "over each configuration, interleaved prompt by prompt")
    a = ap.parse_args(argv)

    from spotviz.embedded.prompts import heldout_prompts
    from spotviz.engine import set_threads
    from spotviz.registry import load_target
    from spotviz.drafter.registry import load_proposer
    from spotviz.samplers.config import DecodeConfig
    from spotviz.samplers.spot import decode_spot_stream
    from spotviz.samplers.standard import decode_standard_stream

    set_threads(1)
    prof = Profiler()
    target = load_target(a.model)
    fwd_log: list = []
    if not a.ratios_only:
        prof.install()
        wrap_forward(target, prof, fwd_log)
    prompts = heldout_prompts(target)[: a.prompts]
    proposer = load_proposer(a.drafter, target, a.mode)
    budgets = [b if b == "auto" else int(b) for b in a.budgets.split(",")]
    cfgs = [("standard", DecodeConfig(mode=a.mode, temperature=a.temperature, gen_length=a.gen_length))]
    if a.control:  # the same decoder again: its per-prompt ratios are this machine's noise floor
        cfgs.append(("standard again", cfgs[0][1]))
    cfgs += [(f"{a.drafter} N={b}", DecodeConfig(mode=a.mode, temperature=a.temperature, gen_length=a.gen_length,
                                                 drafter=a.drafter, budget=b)) for b in budgets]
    # warm-up (caches, first-call costs)
    for _, cfg in cfgs:
        stream = (decode_standard_stream(target, prompts[0], cfg) if cfg.drafter == "none"
                  else decode_spot_stream(target, prompts[0], cfg, proposer))
        run(stream, Profiler(), [])
    results = {}
    per_run = {name: [] for name, _ in cfgs}
    fwd_by = {name: [] for name, _ in cfgs}
    seconds = {name: [] for name, _ in cfgs}  # thread time per prompt
    for i, p in enumerate(prompts):  # interleaved: every configuration sees the same load drift
        best = {}
        for rep in range(a.repeats):
            k = (i * a.repeats + rep) % len(cfgs)  # (the order turns from run to run: the decode that follows another
            for name, cfg in cfgs[k:] + cfgs[:k]:  # decoder's runs ~1-2% slower on these CPUs, session 55)
                c = dataclasses.replace(cfg, seed=i)
                fwd_log.clear()
                stream = (decode_standard_stream(target, p, c) if c.drafter == "none"
                          else decode_spot_stream(target, p, c, proposer))
                passes: list = []
                run(stream, prof, passes)
                t = sum(r[2] for r in passes)
                if rep == 0:
                    per_run[name] += passes
                    fwd_by[name] += list(fwd_log)
                best[name] = min(best.get(name, t), t)
        for name in best:
            seconds[name].append(best[name])
    print(f"{a.model}, T={a.temperature:g}, {a.prompts} prompts x {a.gen_length}: thread-time speed-up over the "
          f"standard decoder (standard / configuration)")
    for name in seconds:
        r = sorted(s0 / max(s1, 1e-9) for s0, s1 in zip(seconds["standard"], seconds[name]))
        print(f"  {name:12s} total {sum(seconds['standard']) / sum(seconds[name]):.3f}x  per prompt: worst {r[0]:.3f}x"
              f"  median {r[len(r) // 2]:.3f}x  best {r[-1]:.3f}x  passes {len(per_run[name])}"
              + (f"  (least of {a.repeats} runs per prompt)" if a.repeats > 1 else ""))
        results.setdefault("speedup", {})[name] = {"total": sum(seconds["standard"]) / sum(seconds[name]),
                                                   "per_prompt": [s0 / s1 for s0, s1 in
                                                                  zip(seconds["standard"], seconds[name])]}
    if a.ratios_only:
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
        return
    w = target.info.block_size
    f1 = [s for n, width, s in fwd_by["standard"] if n == 1 and width == w]
    f1_mean = sum(f1) / len(f1)
    print(f"{a.model}, T={a.temperature:g}, {a.prompts} prompts x {a.gen_length}, thread CPU time per pass (ms)")
    print(f"f(1) inside standard decodes: {1000 * f1_mean:.3f} ms over {len(f1)} passes")
    sizes = defaultdict(list)
    for name in per_run:
        for n, width, s in fwd_by[name]:
            if width == w:
                sizes[n].append(s)
    ratios = {n: (sum(v) / len(v)) / f1_mean for n, v in sorted(sizes.items()) if len(v) >= 5}
    print("f(N)/f(1) in real decodes (window forwards, >= 5 samples): "
          + "  ".join(f"N={n}: {r:.2f}" for n, r in ratios.items()))
    results["f1_ms"] = 1000 * f1_mean
    results["ratios_in_decodes"] = {str(n): r for n, r in ratios.items()}
    labels = ["drafter forward", "features", "drafter context", "tree build", "node states",
              "decide", "accept walk + bonus", "trace record", "known states", "bookkeeping", "budget policy"]
    print()
    print("| configuration | passes | drafted passes | mean states | forward | " + " | ".join(labels)
          + " | other | overhead per pass | overhead per drafted pass |")
    print("|---|---|---|---|---|" + "---|" * (len(labels) + 3))
    groups = []  # (row name, its passes, the passes its per-pass means are over)
    for name, rows in per_run.items():
        drafted = [r for r in rows if r[0] > 1 or "tree build" in r[3] and r[3]["tree build"] > 0]
        groups.append((name, rows, drafted if name != "standard" and drafted else rows))
        plain = [r for r in rows if r not in drafted and r[1] == "verify"]  # (not the run's first pass)
        if name != "standard" and drafted and plain:  # (auto: the passes it did not draft, beside a standard pass)
            groups.append((f"{name} undrafted", plain, plain))
    for name, rows, sel in groups:
        drafted = [r for r in rows if r[0] > 1 or "tree build" in r[3] and r[3]["tree build"] > 0]
        n = max(len(sel), 1)
        comp = defaultdict(float)
        tot = 0.0
        for _, _, el, c in sel:
            tot += el
            for k, v in c.items():
                comp[k] += v
        fwd = comp.get("target forward", 0.0)
        other = tot - sum(comp.values())
        all_over = sum(el - c.get("target forward", 0.0) for _, _, el, c in rows) / max(len(rows), 1)
        cells = [f"{1000 * comp.get(k, 0.0) / n:.3f}" for k in labels]
        states = sum(r[0] for r in rows) / max(len(rows), 1)
        print(f"| {name} | {len(rows)} | {len(drafted) if name != 'standard' else 0} | {states:.2f} | "
              f"{1000 * fwd / n:.3f} | " + " | ".join(cells) + f" | {1000 * other / n:.3f} | {1000 * all_over:.3f} | "
              f"{1000 * (tot - fwd) / n:.3f} |")
        results[name] = {"passes": len(rows), "drafted": len(drafted), "mean_states": states,
                         "forward_ms": 1000 * fwd / n, "components_ms": {k: 1000 * comp.get(k, 0.0) / n for k in labels},
                         "other_ms": 1000 * other / n, "overhead_per_pass_ms": 1000 * all_over,
                         "overhead_per_drafted_pass_ms": 1000 * (tot - fwd) / n,
                         "total_ms": 1000 * sum(r[2] for r in rows)}
    print()
    base = results["standard"]["total_ms"]
    print("total thread time relative to standard: " + ", ".join(
        f"{k}: {base / v['total_ms']:.2f}x" for k, v in results.items() if isinstance(v, dict) and "total_ms" in v and not k.endswith("undrafted")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    from spotviz.cli import exit_with, reporting_errors  # (bad input, a model that cannot be loaded: one line)

    exit_with(reporting_errors(lambda: main() or 0))
