"""The headline of a run compared with the standard decoder: passes saved first, then the wall-clock ratio
beside this hardware's ceiling for it, and one plain sentence saying why the two differ.

A SPOT pass verifies a tree of N states in one batched forward and makes (accepted depth + 1) decisions, where
the standard decoder's pass (N = 1) makes one (in exact mode a decision commits one slot, in threshold mode a set).
Passes saved therefore count model calls saved. Time saved
also depends on what a batch of N states costs: with f(N) the seconds of one forward over N states (the cost
curve the auto budget measured, RunMeta.cost_curve), the forwards of a run cost sum_i f(N_i), so the best
wall-clock ratio the forwards allow against the standard decoder's P passes is

    ceiling = sum_j f(1) / sum_i f(N_i)

over the standard run's passes j and this run's passes i, each at the width its forward had (a forward over two
windows, which both decoders make once per window, at that width's curve; the drafter's own work comes on top). On a
GPU f(N) ~ f(1) for the tree sizes used, so the ceiling is about the pass ratio; on a CPU f(N)/f(1) grows nearly with
N and the ceiling can fall below 1x. Where both runs' passes carry the time of their forwards (PassRecord.forward_s),
the ceiling is priced with those instead (cost_model.observed_ceiling: a curve measured apart missed the forwards
inside decodes, by up to 13% for one state, and told runs that beat it that they were noise). Without a recorded
curve the run's own timings stand in for f in the pass's cost: the mean wall time of its tree passes over the
standard run's.
"""
from __future__ import annotations

import math

from ..cost_model import f_at, observed_ceiling, observed_pass_cost, pass_cost

SAME_RUN_FIELDS = ("model", "prompt", "seed", "mode", "temperature", "gen_length", "block_size")


def same_run(a, b) -> bool:
    """True if `a` and `b` decoded the same prompt with the same settings (so their outputs must agree): the same
    model at the same block size, prompt, seed, mode, temperature and length, and tau where the mode reads it."""
    fields = SAME_RUN_FIELDS + (("threshold",) if a.meta.mode == "threshold" else ())
    return all(getattr(a.meta, f) == getattr(b.meta, f) for f in fields)


def identical_output(trace, baseline) -> bool | None:
    """Tokens equal to the standard run's (None when there is no comparable baseline)."""
    if baseline is None or not same_run(trace, baseline):
        return None
    return list(trace.tokens) == list(baseline.tokens)


def times(r: float) -> str:
    """A ratio as the page writes it: two decimals, halves rounded up (as the canvases' JavaScript rounds them,
    so that 37 / 8 reads 4.63 everywhere)."""
    return f"{math.floor(r * 100 + 0.5) / 100:.2f}"


def speed_words(r: float) -> str:
    """A wall-clock ratio against the standard decoder (its seconds over the run's) in words: "1.06× faster", "1.32×
    slower" or "as fast as standard"."""
    if not r > 0:  # (a run timed at zero: no ratio to say)
        return "untimed"
    return ("as fast as standard" if round(r, 2) == 1 == round(1 / r, 2) else
            f"{r:.2f}× faster" if r >= 1 else f"{1 / r:.2f}× slower")


def two_timings(a: float, b: float) -> tuple[str, str]:
    """Two wall-clock timings in one unit, precise enough that their ratio shows: milliseconds where either is under
    a second ("28 ms" and "34 ms", not "0.03 s" and "0.03 s" beside "1.22× slower"; "2030 ms" and "213 ms", not
    "2.03 s" and "0.21 s" beside "9.52× slower"), else seconds."""
    if min(a, b) < 1:
        return f"{1000 * a:.0f} ms", f"{1000 * b:.0f} ms"
    return f"{a:.2f} s", f"{b:.2f} s"


def drafter_name(drafter: str) -> str:
    return {"none": "standard", "spot": "SPOT", "spot-sets": "SPOT-Sets"}.get(drafter, drafter)


def _pairs(curve) -> list:
    return [c for c in (curve or []) if isinstance(c, (list, tuple)) and len(c) == 2]


def drafted_passes(trace) -> list:
    """The passes whose tree held drafted states (more than the root)."""
    return [p for p in trace.passes if len(p.tree) > 1]


def cost_of_trees(main, base) -> dict | None:
    """What the run's tree passes cost in plain passes on its hardware: {"states": typical N, "ratio":
    f(N)/f(1), "ceiling": the wall-clock ratio the forwards allow (None without a curve or timed forwards),
    "ceiling_from": "forwards" (timed in the runs) or "curve", "pass_cost": with forwards timed, a pass of the run
    in standard passes, its drafting left out (the ceiling is the pass reduction over it), "source", "trees": the
    passes that drafted}."""
    trees = drafted_passes(main)
    if not trees:
        return None
    n = max(2, round(sum(p.states for p in trees) / len(trees)))
    curve, wide = _pairs(main.meta.cost_curve), _pairs(main.meta.cost_curve_two_windows)
    seen = observed_ceiling(base.passes, main.passes)
    paid = observed_pass_cost(base.passes, main.passes)  # (None exactly where seen is)
    per_pass = {"pass_cost": round(paid, 2)} if paid is not None else {}
    if len(curve) >= 2 and f_at(curve, 1) > 0:
        spent = pass_cost(main.passes, curve, wide)
        predicted = pass_cost(base.passes, curve, wide) / spent if spent > 0 else None
        top = seen if seen is not None else predicted
        return {"states": n, "trees": len(trees), "ratio": round(f_at(curve, n) / f_at(curve, 1), 2),
                "ceiling": round(top, 4) if top is not None else None, "source": "measured",
                "ceiling_from": "forwards" if seen is not None else "curve", **per_pass}
    plain = [p.wall_s for p in base.passes if p.wall_s > 0]
    tree_s = [p.wall_s for p in trees if p.wall_s > 0]
    if not plain or not tree_s:
        return None
    return {"states": n, "trees": len(trees), "ratio": round((sum(tree_s) / len(tree_s)) / (sum(plain) / len(plain)), 2),
            "ceiling": round(seen, 4) if seen is not None else None, "source": "this run", "ceiling_from": "forwards",
            **per_pass}


SMALL_TREES = 3.0  # mean states of an auto run's drafted passes below which the status says how to see larger trees


def small_trees_note(trace) -> str:
    """For a run with budget auto whose trees stayed small, or that drafted in few of its passes: why ("" otherwise,
    and where every tree it drafted was followed to the end of a window it could not cross, or of the text; the app
    then offers larger ones)."""
    if not trace.meta.budget_auto or trace.meta.drafter == "none":
        return ""
    trees, off = drafted_passes(trace), auto_off(trace)
    if not trees and not off:
        return ""  # (no pass had anything to guess: no budget would have drafted)
    mean = sum(p.states for p in trees) / len(trees) if trees else 0.0
    rare = off > len(trees)  # (drafting off in most passes: its trees, however large, were few)
    if trees and mean >= SMALL_TREES and not rare:
        return ""
    if trees and not off and not trace.meta.cross_window and all(p.walk_end in ("window", "end") for p in trees):
        return ""  # (every tree was followed to its window's end or the text's, and none could go past the window's
        # end: threshold mode; no larger tree would save a pass)
    kept = ("drafted no tree" if not trees else
            f"drafted a tree in only {len(trees)} of the {len(trees) + off} passes that had slots to guess (about "
            f"{mean:.0f} states each)" if rare else f"kept its trees small (about {mean:.0f} states a pass)")
    return f". Budget auto {kept}: larger trees often save passes (not always) but cost more time here"


def auto_off(trace, idle: set[int] | None = None) -> int:
    """Passes (after the first) where the cost-aware budget drafted nothing though a tree had slots to guess: it
    judged a tree not worth its cost (idle: the run's idle_passes, if already found)."""
    if not trace.meta.budget_auto:
        return 0
    idle = idle_passes(trace) if idle is None else idle
    return sum(1 for p in trace.passes[1:] if len(p.tree) <= 1 and p.index not in idle)


class DraftRoom:
    """Whether each pass of a run, fed in order, had anything a tree could guess. A pass drafts from its state s1
    (every commit before it): it had nothing to guess when s1 left no masked slot in its window (its first decision,
    free, completed it: threshold mode often fills a window at once) and no view of the next window came with it
    (where trees may cross, a fused pass whose bonus stayed in its window gives the next pass one: samplers/spot.py).
    Such a pass verifies s1 alone whatever the budget."""

    def __init__(self, meta):
        self.meta, self.done, self.prev = meta, set(), None

    def step(self, rec) -> bool:
        """Feed the next pass; True if it had nothing to draft (never the first pass: it has nothing to draft from)."""
        m, prev = self.meta, self.prev
        idle = False
        if m is not None and prev is not None and len(rec.tree) <= 1:
            start = len(m.prompt_tokens)
            lo, hi = rec.window
            left = any(p not in self.done for p in range(max(lo, start), min(hi, start + m.gen_length)))
            ahead = m.cross_window and prev.two_windows and list(prev.window) == list(rec.window)
            idle = not left and not ahead
        self.done.update(c.position for c in rec.commits)
        self.prev = rec
        return idle


def idle_passes(trace) -> set[int]:
    """The passes of a run that had nothing a tree could guess (DraftRoom)."""
    room = DraftRoom(trace.meta)
    return {rec.index for rec in trace.passes if room.step(rec)}


def nothing_to_draft(trace, idle: set[int] | None = None) -> bool:
    """Whether no pass of a run had anything a tree could guess (every one after the first: DraftRoom), as when a
    threshold decoder fills each window in one decision (idle: the run's idle_passes, if already found)."""
    idle = idle_passes(trace) if idle is None else idle
    return len(trace.passes) > 1 and len(idle) == len(trace.passes) - 1


# SPOT's wall-clock where a batch costs one pass, as measured (docs/gpu-h200.md: math-bd, budget 16, T = 0, 4 problems)
GPU_MEASURED = ("SPOT at budget 16 (exact mode) needed 4.59× fewer passes and finished 1.73× faster than the standard "
                "decoder (4 math-bd problems)")


def wall_sentence(sum_: dict, device: str, recorded: bool = False) -> str:
    """One plain sentence on why the wall-clock ratio is what it is (`recorded`: a run replayed from its trace, timed
    on the machine that recorded it)."""
    cost = sum_.get("cost")
    if str(device).startswith("cuda"):
        return ("On a GPU one batched pass over the whole tree costs about one plain pass, so passes saved "
                "become time saved.")
    if not cost:
        return ("On a CPU a batched pass costs more the more states it checks; on a GPU it costs about one "
                "plain pass, so passes saved become time saved there.")
    place = "On the machine that recorded this run" if recorded else "Here"
    k = cost.get("trees", 0)
    mean = f"the mean of its {k} drafted passes" if k != 1 else "its one drafted pass"
    fewer = ("the same number of passes" if times(sum_["ratio"]) == "1.00"
             else f"{times(sum_['ratio'])}× fewer passes")
    if cost.get("pass_cost") is not None and cost.get("ceiling") is not None:  # the forwards as the runs timed them
        drafted = f"{k if k != 1 else 'one'} of its passes checked a tree of about {cost['states']} states"
        who = "Where this run was recorded, a pass of it" if recorded else "Here a pass of this run"
        lead = (f"{who} cost {cost['pass_cost']:.2f} plain passes on average, not counting the drafter's own work "
                f"({drafted}). With {fewer}, that makes it {ceiling_words(cost['ceiling'])}.")
        return lead + f" On a GPU a batch of states costs about one pass: on an H200, {GPU_MEASURED}."
    if cost["source"] == "measured":  # the forwards' cost curve
        where = "measured there" if recorded else "measured on this machine"
        lead = (f"{place} a pass checking {cost['states']} states ({mean}) costs {cost['ratio']:.1f} plain "
                f"passes ({where}).")
    else:  # no curve: whole passes timed, so the drafting's own work is in the figure (a GPU would not remove it)
        lead = (f"{place} a pass checking {cost['states']} states ({mean}) took {cost['ratio']:.1f} plain "
                f"passes, its drafting included (timed in this run).")
    if cost.get("ceiling") is not None:
        lead += f" With {fewer}, the forwards alone would make it {ceiling_words(cost['ceiling'])}."
    if cost["source"] != "measured":
        return lead + (" On a GPU the batch itself costs about one pass (the drafting stays): measured on an H200, "
                       f"{GPU_MEASURED}.")
    return lead + (" On a GPU that batch costs about one pass, so passes saved become time saved: measured on an "
                   f"H200, {GPU_MEASURED}.")


def ceiling_words(c: float) -> str:
    """A zero-overhead ceiling in the headline's words: "at best 1.17× faster", "at best 1.61× slower" (the same
    unit as the wall-clock figure beside it, not a bare ratio)."""
    return "at best " + speed_words(c)


def summary(main, base=None, race: list | None = None, recorded: bool = False) -> dict:
    """The headline line of the timeline: numbers, `kpis` ([{big, small, tone}], tone good / warn / bad /
    plain), and a plain `note`. `race`: the other drafters' traces of the same prompt (the race); `recorded`: the
    runs are replayed from traces (an example, an upload), timed where they were recorded."""
    c = main.counters
    out = {"t": "sum", "passes": c.target_passes, "drafter": main.meta.drafter, "device": main.meta.device,
           "wall": round(c.wall_s, 4), "guaranteed": bool(main.meta.identity_guaranteed),
           "kpis": [], "note": ""}
    kpis = out["kpis"]
    idle = idle_passes(main)  # (the passes that had nothing to draft: found once, read below)
    if base is not None and same_run(main, base) and main.meta.drafter != "none":
        b = base.counters
        drafted = drafted_passes(main)
        out.update({"base_passes": b.target_passes, "saved": b.target_passes - c.target_passes,
                    "ratio": round(b.target_passes / max(c.target_passes, 1), 4), "base_wall": round(b.wall_s, 4),
                    "wall_ratio": round(b.wall_s / c.wall_s, 4) if c.wall_s > 0 else None,  # (said inverted)
                    "identical": identical_output(main, base), "cost": cost_of_trees(main, base)})
        kpis.append({"big": f"{out['saved']} target pass{'' if out['saved'] == 1 else 'es'} saved",
                     "small": f"{c.target_passes} instead of {b.target_passes} ({times(out['ratio'])}× fewer)"
                              if out["saved"] else f"{c.target_passes}, as many as the standard decoder",
                     "tone": "good" if out["saved"] > 0 else "warn"})
        if out["wall_ratio"] is not None:
            ceiling = (out["cost"] or {}).get("ceiling")
            setup = float(main.meta.outside_s or 0.0)
            r = out["wall_ratio"]  # (said as faster or slower: "0.62×" read as "62% of the time", i.e. faster)
            mine, theirs = two_timings(c.wall_s, b.wall_s)
            timed = (f"{drafter_name(main.meta.drafter)} {mine} vs standard {theirs} "
                     + ("(one timing each, where it was recorded)" if recorded else "(one timing each)"))
            if not drafted:  # (the standard decoder's passes, one state each: a ratio would be noise)
                kpis.append({"big": "the same work as standard", "tone": "plain", "small": timed})  # (the note: why)
            else:
                kpis.append({"big": speed_words(r) + " (wall-clock)", "tone": "good" if r >= 1 else "warn",
                             "small": timed
                             + (f" · if the drafting cost nothing{' there' if recorded else ''}: "
                                f"{ceiling_words(ceiling)}"
                                if ceiling is not None else "")
                             + (" (more than that is the machine's timing noise)"
                                if ceiling is not None and r > 1.1 * ceiling else "")
                             + (f" · {setup:.2f} s of one-time set-up and exactness checks not counted"
                                if setup >= 0.05 else "")})
        if out["identical"] is not None:
            ok = out["identical"]
            small = ("lossless: the standard decoder's tokens, right or wrong"
                     + (", with the same seed (the same sampling noise)" if main.meta.temperature > 0 else "")
                     + f": {drafter_name(main.meta.drafter)} changes how fast, never what"
                     if ok else
                     "not the standard decoder's tokens")
            if not out["guaranteed"]:
                small = ("the same tokens this time; " if ok else "") + ("this model's batched passes are not "
                                                                        "bit-exact, so identity is not guaranteed")
            kpis.append({"big": "✓ identical output" if ok else "✗ output differs", "small": small,
                         "tone": "good" if ok else "bad"})
        out["note"] = wall_sentence(out, main.meta.device, recorded)
        if not drafted:  # (no batched pass: the wall sentence's reason does not apply)
            why = ((f"at tau {main.meta.threshold:g} the threshold decoder filled each window in one decision, so no "
                    "pass left a slot to guess. A stricter tau (e.g. 0.99) leaves room for SPOT-Sets. "
                    if main.meta.mode == "threshold" else "no pass left a slot to guess. ")
                   if nothing_to_draft(main, idle) else
                   "budget auto judged no tree worth its cost on this hardware. " if auto_off(main, idle) else "")
            rest = ("every pass checked one state, as the standard decoder's do, so the times differ only by "
                    "bookkeeping and the machine's noise (one timing each).")
            out["note"] = "Nothing was drafted: " + (why + rest[0].upper() + rest[1:] if why else rest)
    if main.meta.drafter == "none" and not race:
        kpis.append({"big": f"{c.target_passes} target passes",
                     "small": "the standard decoder, one decision per pass: the baseline SPOT is measured against "
                              "(choose a drafter to see the passes it saves)", "tone": "plain"})
    off = auto_off(main, idle)  # (passes that had nothing to guess are not auto's choice)
    if off:
        out["auto_off"] = off
        kpis.append({"big": f"drafting off in {off} of {c.target_passes - 1} passes",
                     "small": "of those after the first (which has nothing to draft from yet): budget auto judged a "
                              "tree not worth its cost on this hardware", "tone": "warn"})
    if race:
        lanes = [main] + [t for t in race if t is not main] + ([base] if base is not None else [])
        out["race"] = [{"drafter": t.meta.drafter, "passes": t.counters.target_passes,
                        "identical": identical_output(t, base) if t is not base else None} for t in lanes]
        order = sorted(lanes, key=lambda t: t.counters.target_passes)
        kpis.insert(1 if kpis else 0, {"big": "race: " + " · ".join(f"{drafter_name(t.meta.drafter)} "
                                                                     f"{t.counters.target_passes}" for t in order),
                                       "small": "target passes to finish the same text", "tone": "plain"})
    return out
