"""`python -m spotviz bench`: every decoder on one held-out prompt set, in one process, and a results table.

For each (mode, temperature): the standard decoder, then every drafter at every budget (a node count, or
"auto": the size chosen per pass from the target's cost curve) through the same verifier. Reported per
configuration, aggregated over prompts: target passes per generated token, pass reduction x (standard passes /
passes), wall-clock speed-up x as paired ratios (each speculative decode runs right after a standard decode of the
same prompt in the same process with the same threads, between two standard decodes whose mean it is compared
with, so both see the same machine load: total standard time /
total time, and the median and the worst of the per-prompt ratios), mean accepted length (commits per pass),
acceptance rate per depth, identical-output rate vs the standard decoder, and the mean tree size per pass. Plus: how often the previous pass already predicted the committed token, drafter transfer from the
other embedded model (without / with light calibration) and the coupled-noise ablation at T = 1.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from ..cost_model import observed_ceiling
from ..drafter.registry import PROPOSERS, learned_drafter, load_proposer, registered
from ..drafter.store import DRAFTER_DIR, drafters_used
from ..embedded.prompts import heldout_prompts, load_prompts
from ..registry import DEFAULT_MODEL, EMBEDDED, load_target
from ..samplers.config import AUTO, DecodeConfig
from ..samplers.forward_cost import ceiling, cost_curve
from ..samplers.spot import decode_spot
from ..samplers.standard import decode_standard
from ..samplers.simulated import SimulatedCost, load_curve
from ..trace import WALK_ENDS, walk_end_counts
from .progress import EtaProgress, duration, unit_seconds
from .quality import DISTINCT_MIN, RUN_MAX, TOP_SHARE_MAX, greedy_quality
from .stats import stale_agreement, window_bound


BENCH_DRAFTERS = ("spot", "training-free", "calibrated")  # (spot: SPOT in exact mode, SPOT-Sets in threshold mode)


@dataclass
class BenchRow:
    mode: str
    temperature: float
    drafter: str
    budget: int | str
    passes_per_token: float
    pass_reduction: float
    speedup_wall: float
    tokens_per_s: float
    mean_accepted_length: float
    acceptance_per_depth: list[float]
    identical: float
    note: str = ""
    wall_ratio_median: float = 0.0  # per-prompt paired ratios (standard wall / speculative wall)
    wall_ratio_min: float = 0.0
    mean_states: float = 1.0  # target states per pass (the tree size; with auto, the sizes it chose)
    ceiling: float = 1.0  # zero-overhead wall-clock ceiling: priced with the runs' own forward times where they
    # were recorded (cost_model.observed_ceiling), else with the cost curve (ceiling_curve)
    ceiling_curve: float = 1.0  # the same priced with the cost curve f(N) measured apart (its prediction)
    walk_ends: dict = field(default_factory=dict)  # tree passes per reason their walk stopped (trace.WALK_ENDS)


@dataclass
class BenchResult:
    model: str
    n_prompts: int
    gen_length: int
    threshold: float
    rows: list[BenchRow] = field(default_factory=list)
    stale_agreement: dict = field(default_factory=dict)  # per temperature ("T=0"): eval/stats.stale_agreement
    device: str = "cpu"
    threads: int = 1
    seconds: float = 0.0
    prune: float = 0.0
    cost_curve: list = field(default_factory=list)  # [[states, seconds per pass]] measured for --budget auto
    simulated: str = ""  # the device whose cost curve the forwards were charged at (samplers/simulated.py); "": none
    quality: dict = field(default_factory=dict)  # greedy outputs: degeneracy and syntax measures (eval/quality.py)
    # threshold mode, per temperature ("T=0"): the most a tree inside its window can cut the threshold decoder's
    # passes, its passes over the windows it decodes (eval/stats.window_bound)
    window_bound: dict = field(default_factory=dict)
    drafters: str = ""  # where the drafters came from (drafter/store.drafters_used)
    config: dict = field(default_factory=dict)  # the BenchConfig it ran (to run it again)
    interrupted: bool = False  # stopped (Ctrl-C) before its plan was done: the rows finished by then


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C during run_bench, carrying the result so far (`result`: its finished rows) for the caller to keep."""

    def __init__(self, result: BenchResult):
        super().__init__(f"{len(result.rows)} row(s) finished")
        self.result = result


def _run(target, prompts, cfg: DecodeConfig, proposer=None, tick=lambda units: None, spec_units: float = 1.0):
    """Decode every prompt (seed + i). With a proposer, each speculative decode runs between two standard decodes
    of the same prompt (A-B-A), so that the wall-clock ratio compares runs made under the same load, drift
    included: the paired standard time is the mean of the two. Returns (speculative traces, standard traces, the
    pass records of both standard decodes of every prompt: what the observed ceiling prices, as their mean).
    `tick(units)` is called after each decode (eval/progress.py's units). Before the timed decodes, one untimed
    decode of the first prompt warms the row up. A speculative row's: the first time a pass shape meets the target,
    its batch invariance is checked with extra one-row forwards (targets/invariance.py), which would otherwise land
    in the first prompt's timing (with budget auto it is also a first run to learn from, as an earlier run in the
    process would be: samplers/auto_budget.py). The standard row's: its tokens/s, timed on its own, came out up to
    1.7x below the same decoder's paired runs when the first decode of a (mode, temperature) was cold."""
    traces, base, records = [], [], []
    if proposer is not None and prompts:
        decode_spot(target, prompts[0], cfg, proposer)
        tick(spec_units)
    elif prompts:  # (the standard row's own: its tokens/s were a cold first decode's, below its paired runs')
        decode_standard(target, prompts[0], cfg)
        tick(1)
    for i, p in enumerate(prompts):
        c = replace(cfg, seed=cfg.seed + i)
        before = decode_standard(target, p, c)
        base.append(before)
        tick(1)
        if proposer is not None:
            traces.append(decode_spot(target, p, c, proposer))
            after = decode_standard(target, p, c)
            tick(1 + spec_units)
            records += before.passes + after.passes
            before.counters.wall_s = (before.counters.wall_s + after.counters.wall_s) / 2
    return (traces, base, records) if proposer is not None else (base, base, [])


def _row(mode, t, drafter, budget, runs, base, curve, note="") -> BenchRow:
    traces, paired, standard_records = runs
    passes = sum(tr.counters.target_passes for tr in traces)
    gen = sum(tr.counters.generated_tokens for tr in traces)
    wall = sum(tr.counters.wall_s for tr in traces)
    b_passes = sum(tr.counters.target_passes for tr in base)
    b_wall = sum(tr.counters.wall_s for tr in paired)
    commits = sum(tr.counters.commits for tr in traces)
    depth: dict[int, list[float]] = {}
    for tr in traces:
        for d, a in enumerate(tr.counters.acceptance_per_depth):
            depth.setdefault(d, []).append(a)
    per_depth = [sum(v) / len(v) for _, v in sorted(depth.items())][:8]
    same = sum(a.tokens == b.tokens for a, b in zip(traces, base)) / len(traces)
    ratios = sorted(p.counters.wall_s / max(tr.counters.wall_s, 1e-9) for tr, p in zip(traces, paired))
    states = sum(p.states for tr in traces for p in tr.passes) / max(passes, 1)
    mine = [p for tr in traces for p in tr.passes]
    if drafter == "none":  # (the standard decoder against itself: exactly 1, whatever the rounding)
        predicted = seen = 1.0
    else:
        predicted = ceiling([p for tr in base for p in tr.passes], mine, curve)
        seen = observed_ceiling(standard_records, mine, standard_runs=2)
    return BenchRow(mode, t, drafter, budget, passes / max(gen, 1), b_passes / max(passes, 1),
                    b_wall / max(wall, 1e-9), gen / max(wall, 1e-9), commits / max(passes, 1),
                    [round(x, 3) for x in per_depth], same, note, ratios[len(ratios) // 2], ratios[0], states,
                    predicted if seen is None else seen, predicted,
                    walk_end_counts(mine))


def _listed(values) -> str:
    """A flag's list of values as typed (0, 2 or auto), "nothing" for none: for messages."""
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values) if values else "nothing"


BENCH_FLAGS = {"gen_length": "--gen-length", "threshold": "--threshold", "min_path_prob": "--prune"}


@dataclass(frozen=True)
class BenchConfig:
    """One bench, end to end (checked when made). `modes`: the decoding modes benchmarked (exact, threshold or
    both). `budgets` apply to the first mode at the first temperature (the headline sweep); `other_budgets` (default:
    the same) to the other (mode, temperature) pairs, so a CPU run can sweep fewer budgets there. Transfer rows
    (`transfer`: the other embedded models' drafters) and the coupled-noise ablation use budget 16 (or the nearest
    number swept). `prune` > 0 adds, for the SPOT drafter at every budget swept, a row with draft nodes below that
    path probability pruned (the budget becomes a cap). `simulate_curve`: a cost-curve file
    (samplers/simulated.load_curve) whose f(N) every forward is charged at, on a virtual clock: the wall-clock columns
    then say what the decoders would take where a forward costs that (the drafter and the bookkeeping at this
    machine's cost). `drafter_dir`: drafters trained by train-drafter (default: the model's shipped ones, else the
    fallback's: drafter/store.py). `block_size`: a published model's block or window size instead of its config's
    (registry.load_target). `prompts_file`: one's own prompts (default: the model's held-out set). `drafters`: the
    built-in ones (spot: SPOT-Sets in threshold mode) and any registered with drafter/registry.register_proposer (the
    command line's --plugin, whose files `plugins` records), each in the modes it drafts for."""

    model: str = DEFAULT_MODEL
    prompts_file: str | None = None
    n_prompts: int = 20
    gen_length: int = 128
    budgets: tuple = (AUTO, 2, 4, 8, 16, 32)
    temperatures: tuple = (0.0, 1.0)
    threshold: float = 0.9
    drafters: tuple = BENCH_DRAFTERS
    transfer: bool = True
    other_budgets: tuple | None = None
    prune: float = 0.0
    modes: tuple = ("exact", "threshold")
    simulate_curve: str | None = None
    drafter_dir: str | None = None
    block_size: int | None = None
    plugins: tuple = ()  # the files that registered drafters of one's own (the command line's --plugin): recorded

    def __post_init__(self):
        from ..errors import worded_with_flags
        from ..samplers.config import MAX_BUDGET, MAX_TEMPERATURE, DecodeError

        if isinstance(self.plugins, (str, os.PathLike)) or \
                not all(isinstance(p, (str, os.PathLike)) for p in self.plugins):
            raise ValueError(f"plugins must be a tuple of file paths, got {self.plugins!r}")
        object.__setattr__(self, "plugins", tuple(os.fspath(p) for p in self.plugins))  # (as JSON writes them)
        if isinstance(self.n_prompts, bool) or not isinstance(self.n_prompts, int) or self.n_prompts < 1:
            raise ValueError(f"--n-prompts must be a whole number of at least 1, got {self.n_prompts!r}")
        for option, budgets in (("--budgets", self.budgets), ("--other-budgets", self.other_budgets)):
            if budgets is None and option == "--other-budgets":
                continue
            bad = [b for b in budgets or () if b != AUTO and (isinstance(b, bool) or not isinstance(b, int)
                                                               or not 1 <= b <= MAX_BUDGET)]
            if not budgets or bad:
                raise ValueError(f"{option}: give budgets from 1 to {MAX_BUDGET} (or auto), got "
                                 f"{_listed(bad or budgets)}")
        if not self.temperatures or any(isinstance(t, bool) or not isinstance(t, (int, float))
                                        or not 0 <= t <= MAX_TEMPERATURE for t in self.temperatures):
            raise ValueError(f"--temperatures: give temperatures from 0 to {MAX_TEMPERATURE:g}, got "
                             f"{_listed(self.temperatures)}")
        try:  # (the settings every decode of the bench shares, checked as a decode checks them)
            DecodeConfig(gen_length=self.gen_length, threshold=self.threshold, min_path_prob=self.prune)
        except DecodeError as e:  # (worded with the flags, as the checks above: DecodeConfig names its fields)
            raise worded_with_flags(e, BENCH_FLAGS) from None
        if not self.modes or any(m not in ("exact", "threshold") for m in self.modes):
            raise ValueError(f"--modes {', '.join(self.modes) or '(none)'}: choose exact, threshold or both")
        yours = tuple(registered())  # (drafters of one's own: register_proposer)
        if not self.drafters or any(d not in BENCH_DRAFTERS + yours for d in self.drafters):
            raise ValueError(f"--drafters {', '.join(self.drafters) or '(none)'}: choose from "
                             f"{', '.join(BENCH_DRAFTERS + yours)} (spot is SPOT-Sets in threshold mode)")
        for d in self.drafters:
            if d in yours and not set(PROPOSERS[d].modes) & set(self.modes):
                raise ValueError(f"--drafters {d}: it drafts in {' and '.join(PROPOSERS[d].modes)} mode, which "
                                 f"--modes {','.join(self.modes)} leaves out")
        if self.drafter_dir is not None and not Path(self.drafter_dir).expanduser().is_dir():
            raise ValueError(f"--drafter-dir: {self.drafter_dir!r} is not a folder of trained drafters "
                             "(train-drafter --out)")


@dataclass(frozen=True)
class PlannedRow:
    """One speculative row of a bench: a drafter at a budget (with its variant: pruning, independent noise, another
    model's drafters from `folder`), run against the standard decoder of its (mode, temperature)."""

    drafter: str
    budget: int | str
    note: str = ""
    prune: float = 0.0
    coupled: bool = True
    folder: Path | None = None  # another model's drafters (a transfer row); None: the bench's own


def bench_plan(cfg: BenchConfig, transfers: list) -> list[tuple[str, float, list[PlannedRow]]]:
    """The speculative rows of `cfg`, per (mode, temperature) in the order they run: every drafter at every budget
    of the sweep (the first mode and temperature sweep `budgets`, the others `other_budgets`), SPOT pruned where
    `prune` > 0, and where spot is benchmarked, at T > 0 the coupled-noise ablation and at the first temperature the
    transfer rows (`transfers`: (label, folder) of other models' drafters), which use budget 16, or the nearest
    number swept; a drafter of one's own only in the modes it drafts for."""
    plan = []
    for mode in cfg.modes:
        for t in cfg.temperatures:
            first = mode == cfg.modes[0] and t == cfg.temperatures[0]
            sweep = cfg.budgets if first else (cfg.other_budgets or cfg.budgets)
            near = min((b for b in sweep if b != AUTO), key=lambda b: abs(b - 16), default=16)
            learned = learned_drafter(mode)
            rows = []
            for name in cfg.drafters:
                dname = learned if name == "spot" else name
                if mode not in PROPOSERS[dname].modes:  # (a drafter of one's own may draft in one mode only)
                    continue
                for b in sweep:
                    rows.append(PlannedRow(dname, b))
                    if cfg.prune > 0 and name == "spot" and b != AUTO and b > 2:
                        rows.append(PlannedRow(dname, b, f"pruned below path prob {cfg.prune:g}", prune=cfg.prune))
            spot = "spot" in cfg.drafters  # (the ablation and transfer rows are the learned drafter's)
            if spot and t > 0:
                rows.append(PlannedRow(learned, near, "independent noise (ablation)", coupled=False))
            if spot and t == cfg.temperatures[0]:
                rows += [PlannedRow(learned, near, f"transfer {label}", folder=folder) for label, folder in transfers]
            plan.append((mode, t, rows))
    return plan


def run_bench(cfg: BenchConfig | None = None, log=print, **settings) -> BenchResult:
    """Benchmark every decoder of `cfg` (a BenchConfig, or its fields as keywords) on its prompts; the target's cost
    curve (measured now if not cached; recorded in the result) serves budget "auto" and every row's zero-overhead
    ceiling; the result says whose drafters ran (`drafters`)."""
    if cfg is not None and not isinstance(cfg, BenchConfig):
        raise TypeError(f"cfg must be a BenchConfig (or give its fields as keywords), got {type(cfg).__name__}")
    cfg = cfg or BenchConfig(**settings)
    model, gen_length, temperatures, threshold = cfg.model, cfg.gen_length, cfg.temperatures, cfg.threshold
    prompts_file, simulate_curve, drafter_dir = cfg.prompts_file, cfg.simulate_curve, cfg.drafter_dir
    # (a bad file fails first; the bench's settings are the CLI's flags)
    simulated = load_curve(simulate_curve, model, what="--simulate-curve") if simulate_curve else None
    t_start = time.time()
    prompts = load_prompts(prompts_file) if prompts_file else None  # a bad file fails before the model loads
    target = load_target(model, block_size=cfg.block_size)
    have = prompts or heldout_prompts(target)
    if cfg.n_prompts > len(have):  # (said, not silently capped)
        log(f"note: --n-prompts {cfg.n_prompts}: {'the file' if prompts else 'the held-out set'} holds {len(have)} "
            f"prompts; running {len(have)}")
    prompts = have[:cfg.n_prompts]
    res = BenchResult(target.info.name, len(prompts), gen_length, threshold, device=str(target.device),
                      threads=torch.get_num_threads(), prune=cfg.prune,
                      drafters=drafters_used(target.info.name, drafter_dir), config=asdict(cfg))
    if simulated is not None:
        target = SimulatedCost(target, simulated)
        res.simulated = f"{simulated.device or 'another device'} ({simulated.dtype or 'its dtype'}), {simulate_curve}"
        log(f"simulated: every forward is charged at the cost curve of {res.simulated}; the rest at this CPU's cost")
    log(f"bench {model}: {len(prompts)} prompt{'s' * (len(prompts) != 1)} x {gen_length} tokens, budgets "
        f"{_listed(cfg.budgets)}, T {_listed(temperatures)}")
    if len(prompts) < 10:
        log(f"note: {len(prompts)} prompt{'s' * (len(prompts) != 1)}: pass counts are exact, but the wall-clock ratios "
            "scatter by several percent per prompt on a CPU (one can land above its zero-overhead ceiling); 20 or more "
            "give figures to report")
    curve = cost_curve(target, log=log)  # for budget auto, and every row's zero-overhead ceiling
    res.cost_curve = curve.as_pairs()
    log("cost curve (ms per pass over N states): " + "  ".join(f"f({int(n)})={1000 * s:.2f}" for n, s in res.cost_curve))
    plan = bench_plan(cfg, [(label, folder) for o in EMBEDDED if o != model and cfg.transfer
                            for label, folder in ((f"from {o}", DRAFTER_DIR / o),
                                                  (f"from {o} + calibration", DRAFTER_DIR / model / f"from-{o}"))
                            if folder.is_dir()])

    def spec_units(b) -> float:  # one speculative decode: a tree of b states costs ~f(b)/f(1) passes, ~2x fewer
        if b == AUTO:
            return 1.0
        f = dict((int(n), s) for n, s in res.cost_curve)
        ratio = f[min((n for n in f if n >= b), default=max(f))] / f[1] if f else 1 + 0.3 * (b - 1)
        return max(1.0, ratio / 2)

    P = len(prompts)
    # the plan in standard-decode units (eval/progress.py), for the estimate and the ETA: greedy quality and the
    # previous-pass agreement, then per (mode, temperature) its standard row and every planned row (A-B-A for every
    # prompt, after one untimed warm-up decode)
    units = P * (1 + len(temperatures)) + sum(P + 1 + sum(P * (2 + spec_units(r.budget)) + spec_units(r.budget)
                                                      for r in rows) for _, _, rows in plan)
    unit_s = unit_seconds(target, prompts[0], gen_length)
    log(f"estimate: ~{duration(units * unit_s)} for about {units:.0f} standard-decode equivalents of {gen_length} "
        f"tokens (one takes {unit_s:.1f} s here; large trees make it longer); progress and ETA follow")
    progress = EtaProgress(units, f"bench {model}", units * unit_s)

    def row_done(row: BenchRow) -> None:
        res.rows.append(row)
        log(f"{_fmt(row)}  [{progress.eta()}]")

    try:
        _measure(cfg, target, prompts, plan, res, curve, spec_units, row_done, progress, log)
    except KeyboardInterrupt:
        progress.close()  # (the error line then starts a line of its own)
        res.interrupted = True
        res.seconds = time.time() - t_start
        raise BenchInterrupted(res) from None
    progress.close()
    res.seconds = time.time() - t_start
    return res


def _measure(cfg, target, prompts, plan, res, curve, spec_units, row_done, progress, log) -> None:
    """run_bench's measurements, into `res`: greedy quality, the previous pass's agreement, then the plan's rows
    (each handed to row_done when finished)."""
    gen_length, temperatures, threshold, drafter_dir = cfg.gen_length, cfg.temperatures, cfg.threshold, cfg.drafter_dir
    P = len(prompts)
    res.quality = greedy_quality(target, prompts, gen_length)
    progress.tick(P)
    q = res.quality.get("summary") or {}
    if q:
        log(f"greedy (T=0) outputs: {q['degenerate_outputs']} of {q['outputs']} degenerate (repeating themselves); "
            f"worst share of distinct tokens {100 * q['min_distinct_share']:.0f}%")
    res.stale_agreement = {f"T={t:g}": stale_agreement(target, prompts, gen_length=gen_length, temperature=t)
                           for t in temperatures}
    progress.tick(P * len(temperatures))
    log("previous pass already held the committed token (how predictable the target is: SPOT's regime is > 90%): "
        + ", ".join(f"{k} {100 * v['stale_agreement']:.1f}% of {v['decisions']} decisions"
                    for k, v in res.stale_agreement.items()) + f"  [{progress.eta()}]")
    proposers = {}  # (drafter, mode, folder) -> the loaded proposer
    for mode, t, rows in plan:
        dcfg = DecodeConfig(mode=mode, temperature=t, threshold=threshold, gen_length=gen_length)
        base_runs = _run(target, prompts, dcfg, tick=progress.tick)
        base = base_runs[0]
        row_done(_row(mode, t, "none", 1, base_runs, base, curve))
        if mode == "threshold":
            bound = res.window_bound[f"T={t:g}"] = round(window_bound(base), 3)
            log(f"threshold T={t:g}: trees stay inside their window, so at most {bound:.2f}x fewer passes than "
                "the threshold decoder (its passes over the windows it decodes)")
        for r in rows:
            folder = r.folder if r.folder is not None else drafter_dir
            key = (r.drafter, mode, folder)
            if key not in proposers:
                proposers[key] = load_proposer(r.drafter, target, mode, folder)
            c = replace(dcfg, drafter=r.drafter, budget=r.budget, min_path_prob=r.prune, coupled_noise=r.coupled,
                        drafter_dir=str(folder) if folder is not None else None)  # (auto's memory is per folder)
            row_done(_row(mode, t, r.drafter, r.budget, _run(target, prompts, c, proposers[key], progress.tick,
                                                             spec_units(r.budget)), base, curve, note=r.note))


def _fmt(r: BenchRow) -> str:
    return (f"{r.mode:9s} T={r.temperature:<3g} {r.drafter:13s} N={str(r.budget):<4s} states {r.mean_states:5.2f}"
            f"  passes/token {r.passes_per_token:.3f}  reduction {r.pass_reduction:.2f}x  wall {r.speedup_wall:.2f}x"
            f" (ceiling {r.ceiling:.2f}x; curve's {r.ceiling_curve:.2f}x)"
            f" (per prompt: median {r.wall_ratio_median:.2f}x, worst {r.wall_ratio_min:.2f}x)  {r.tokens_per_s:6.1f} tok/s"
            f"  accepted {r.mean_accepted_length:.2f}  identical {100 * r.identical:.0f}%  {r.note}"
            + ("  walks stopped: " + " · ".join(f"{k} {v:.0f}%" for k, v in _end_shares(r).items())
               if r.walk_ends else ""))


def _end_shares(r: BenchRow) -> dict[str, float]:
    """{reason: % of the row's tree passes} for each reason its walks stopped for, in WALK_ENDS order."""
    n = sum(r.walk_ends.values())
    return {k: 100 * c / n for k, c in r.walk_ends.items()} if n else {}


def to_markdown(res: BenchResult) -> str:
    own = (res.config or {}).get("prompts_file")  # (a file of one's own: not the held-out set)
    which = f"prompts from {Path(own).name}" if own else "held-out prompts"
    lines = [f"### {res.model}: {res.n_prompts} {which} x {res.gen_length} tokens "
             f"({res.device}, {res.threads} thread{'s' * (res.threads != 1)}"
             + (f", tau={res.threshold}" if any(r.mode == "threshold" for r in res.rows) else "")
             + f", {res.seconds / 60:.1f} min)", ""]
    if res.interrupted:
        lines += [f"**Interrupted** (Ctrl-C) after {len(res.rows)} row{'s' * (len(res.rows) != 1)}: the rows below are "
                  "the ones finished by then.", ""]
    if res.simulated:
        lines += [f"**Simulated wall-clock**: every target forward was charged at the cost curve of {res.simulated} "
                  "(a virtual clock: this CPU's thread time outside the forwards, the curve's f(N) for each "
                  "forward); the pass counts and outputs are real, the times a model of that device.", ""]
    if res.drafters:
        lines += [f"Drafters: {res.drafters}.", ""]
    if res.config.get("plugins"):
        lines += [f"Drafters of one's own registered by: {', '.join(map(str, res.config['plugins']))}.", ""]
    sa = ", ".join(f"{k}: {100 * v['stale_agreement']:.1f}%" for k, v in res.stale_agreement.items())
    lines += [f"Previous-pass prediction already equals the committed token (exact decoding): {sa}", ""]
    q = res.quality.get("summary") if res.quality else None
    if q:
        syn = (f"; generated lines inside the longest valid-Python prefix: {100 * q['mean_valid_line_share']:.0f}%"
               if "mean_valid_line_share" in q else "")
        lines += [f"Greedy (T=0) outputs: {q['degenerate_outputs']} of {q['outputs']} degenerate (failing any of: distinct "
                  f"tokens >= {100 * DISTINCT_MIN:.0f}%, no token > {100 * TOP_SHARE_MAX:.0f}%, no run > {RUN_MAX}); worst "
                  f"distinct share {100 * q['min_distinct_share']:.0f}%, worst top-token share "
                  f"{100 * q['max_top_token_share']:.0f}%, longest run {q['max_longest_run']}{syn}", ""]
    if res.cost_curve:
        f1 = res.cost_curve[0][1]
        lines += ["Target cost curve (ms per pass over N states, used by budget auto; f(N)/f(1) in brackets): "
                  + ", ".join(f"f({int(n)}) = {1000 * s:.1f} ({s / f1:.2f})" for n, s in res.cost_curve), "",
                  "Zero-overhead ceiling: the wall-clock speed-up the run's passes would give if drafting and the "
                  "tree cost nothing: the standard decoder's time over the run's forwards, timed in the run, plus a "
                  "standard pass's own work for each of its passes (cost_model.observed_ceiling): what this hardware "
                  "allows at this acceptance. In brackets the same priced with the cost curve above, the prediction "
                  "`auto` works from (the sum of f over the standard decoder's passes / the same over the run's, each "
                  "forward at its width: both decoders evaluate two windows once per window).", ""]
    if res.window_bound:
        wb = ", ".join(f"{k}: {v:.2f}x" for k, v in res.window_bound.items())
        lines += [f"Window bound (threshold mode): a pass decides at most one window's first set and threshold trees "
                  f"stay inside their window, so every window costs a pass: no drafter can cut the threshold "
                  f"decoder's passes more than its passes over the windows it decodes ({wb}; eval/stats.py).", ""]
    lines += ["| mode | T | drafter | budget | states/pass | passes/token | pass reduction | wall-clock speed-up "
              "(paired) | zero-overhead ceiling | per-prompt ratio median / worst | tokens/s | mean accepted length | "
              "acceptance per depth (1..) | identical output | note |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res.rows:
        spec = r.drafter != "none"
        lines.append(f"| {r.mode} | {r.temperature:g} | {r.drafter} | {r.budget if spec else '-'} | "
                     f"{r.mean_states:.2f} | {r.passes_per_token:.3f} | {r.pass_reduction:.2f}x | {r.speedup_wall:.2f}x | "
                     f"{r.ceiling:.2f}x ({r.ceiling_curve:.2f}x) | "
                     f"{f'{r.wall_ratio_median:.2f}x / {r.wall_ratio_min:.2f}x' if spec else '-'} | "
                     f"{r.tokens_per_s:.1f} | {r.mean_accepted_length:.2f} | "
                     f"{' '.join(f'{a:.2f}' for a in r.acceptance_per_depth[:6])} | {100 * r.identical:.0f}% | {r.note} |")
    ends = [r for r in res.rows if r.walk_ends]
    if ends:
        lines += ["", "Where the acceptance walks stopped (share of each row's tree passes; samplers/verify.walk_end): "
                  + "; ".join(f"{k}: {v}" for k, v in WALK_ENDS.items()) + ".", "",
                  "| drafter | mode | T | budget | tree passes | " + " | ".join(WALK_ENDS) + " | note |",
                  "|---|---|---|---|---|" + "---|" * len(WALK_ENDS) + "---|"]
        for r in ends:
            shares = _end_shares(r)
            lines.append(f"| {r.drafter} | {r.mode} | {r.temperature:g} | {r.budget} | {sum(r.walk_ends.values())} | "
                         + " | ".join(f"{shares.get(k, 0):.0f}%" for k in WALK_ENDS) + f" | {r.note} |")
    return "\n".join(lines) + "\n"


def file_stem(model: str) -> str:
    """A model's name as part of a file name: a name with folders in it (a path, a Hub repo id) by its last two
    parts joined with "-", characters outside [A-Za-z0-9._-] replaced."""
    parts = [p for p in str(model).replace("\\", "/").split("/") if p][-2:] or ["model"]
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in "-".join(parts)).lstrip(".") or "model"


def save(res: BenchResult, out: str | Path) -> Path:
    """Write bench-<model>.json and .md into `out` (an interrupted run: bench-<model>.interrupted.*, so that it
    never overwrites a finished run's); returns the .md's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"bench-{file_stem(res.model)}" + (".interrupted" if res.interrupted else "")
    (out / f"{stem}.json").write_text(json.dumps(asdict(res), indent=1))
    (out / f"{stem}.md").write_text(to_markdown(res))
    return out / f"{stem}.md"
