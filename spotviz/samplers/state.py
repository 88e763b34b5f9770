"""What a sampler keeps while it runs: the token row and its bookkeeping (DecodeState), the running totals
(SpecDecodingStats), the streamed updates (Progress) and the trace they end in."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Iterator

import torch

from .. import __version__
from ..drafter.registry import PROPOSERS
from ..drafter.store import drafters_used
from ..errors import PromptTruncatedWarning
from ..noise import GumbelNoise
from ..targets.base import DiffusionTarget
from ..trace import Commit, Counters, PassRecord, RunMeta, Trace
from .config import AUTO, DecodeConfig, encode_prompt, trees_may_cross


@dataclass
class SpecDecodingStats:
    """Running totals of a decode, named as vLLM's SpecDecodingStats, updated once per pass so that the counters
    streamed after every pass cost O(1): passes that verified a tree (num_drafts), drafted states verified
    (num_draft_tokens), drafted commits accepted (num_accepted_tokens), slots committed (num_commits), and per depth
    d the passes whose walk reached depth d - 1 and how many of them accepted depth d
    (num_accepted_tokens_per_pos: d -> [accepted, reached])."""

    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_commits: int = 0
    num_accepted_tokens_per_pos: dict = field(default_factory=dict)

    def observe(self, rec: PassRecord) -> None:
        self.num_commits += len(rec.commits)
        self.num_accepted_tokens += sum(c.drafted for c in rec.commits)
        if len(rec.tree) > 1:
            self.num_drafts += 1
            self.num_draft_tokens += len(rec.tree) - 1
            reached = len(rec.accepted_path) - 1  # accepted drafted edges
            for d in range(1, max(n.depth for n in rec.tree) + 1):  # P(accept depth d | reached depth d-1)
                if reached >= d - 1:
                    hits = self.num_accepted_tokens_per_pos.setdefault(d, [0, 0])
                    hits[0] += int(reached >= d)
                    hits[1] += 1

    def acceptance_per_depth(self) -> list[float]:
        return [h / n for _, (h, n) in sorted(self.num_accepted_tokens_per_pos.items())]


class DecodeState:
    """The token row being decoded, with the bookkeeping every sampler needs."""

    @classmethod
    def begin(cls, target: DiffusionTarget, prompt: str, cfg: DecodeConfig) -> "DecodeState":
        """Encode the prompt (once per run; the configuration was checked when it was made). A prompt that does not
        fit the context with the generation loses its beginning, with a PromptTruncatedWarning."""
        prompt_ids, truncated = encode_prompt(target, prompt, cfg.gen_length)
        if truncated:
            info, whole = target.info, len(target.encode(prompt))
            keep = (f"a gen_length of at most {info.max_length - whole} keeps it whole" if whole < info.max_length
                    else "no gen_length keeps it whole")
            warnings.warn(f"{info.name}: a prompt of {whole} tokens and gen_length {cfg.gen_length} exceed the "
                          f"context of {info.max_length} tokens: the prompt's first {whole - len(prompt_ids)} tokens "
                          f"were dropped (the model saw its last {len(prompt_ids)}); {keep}", PromptTruncatedWarning)
        return cls(target, prompt_ids, cfg, prompt, truncated)

    def __init__(self, target: DiffusionTarget, prompt_ids: list[int], cfg: DecodeConfig, prompt: str = "",
                 truncated: bool = False):
        self.target = target
        self.cfg = cfg
        self.prompt, self.truncated = prompt, truncated
        self.budget_auto = cfg.drafter != "none" and cfg.budget == AUTO
        self.cost_curve: list = []  # [[states, seconds]] when the budget is auto
        self.cost_curve_two_windows: list = []  # (the same for a forward over two windows)
        self.calls_outside = 0  # target forward calls made for the run outside its passes (RunMeta)
        self.rule = cfg.rule
        self.mask_id = target.info.mask_id
        self.prompt_len = len(prompt_ids)
        self.total_len = self.prompt_len + cfg.gen_length
        self.tokens = torch.full((self.total_len,), self.mask_id, dtype=torch.long)
        self.tokens[: self.prompt_len] = torch.tensor(prompt_ids, dtype=torch.long)
        self.windows = target.windows(self.prompt_len, self.total_len)
        self.noise = GumbelNoise(cfg.seed, target.info.vocab_size)
        self.cache = target.empty_cache()
        self.step = 0  # decision index: the noise step of the next decision
        self.passes: list[PassRecord] = []
        # the run's clock: the machine's, or a target's virtual one (samplers/simulated.py: another device's forward
        # cost), stopped while a streamed update is with its consumer (wall)
        self._clock = getattr(target, "clock", None) or time.perf_counter
        self.paused_s = 0.0  # time the stream spent handed out to its consumer: not decoding time
        self._handed_out: float | None = None  # the clock when the last update was handed out (None: running)
        self.t0 = self.wall()  # (moved to the first pass by begin_passes: set-up is not decoding time)
        self.setup_s = 0.0  # one-time work before the first pass: loading the drafter, measuring the cost curve
        self.checks_s = 0.0  # batch-shape checks (targets/invariance.check_pass): once per shape, not decoding
        self._checks_counted = 0.0  # (the part of checks_s already taken out of a pass's wall_s)
        self.clock = self.wall  # times the policy observes (auto: samplers/forward_cost.pass_clock, the curve's clock)
        self.stats = SpecDecodingStats()
        self.forward_wall = 0.0  # wall time of the target forward of the pass being made (PassRecord.forward_s)
        device = str(getattr(target, "device", "cpu"))
        # (an accelerator runs a forward asynchronously: its time is read after synchronising; a CPU needs none)
        self._sync = (None if device.startswith("cpu") or getattr(target, "clock", None) is not None else
                      getattr(getattr(torch, device.split(":")[0], None), "synchronize", None))

    def synced_wall(self) -> float:
        """wall() once the device has finished its queued work (a forward's time on an accelerator)."""
        if self._sync is not None:
            self._sync()
        return self.wall()

    def wall(self) -> float:
        """The run's decoding clock: the machine's (or the target's virtual) clock less the time the stream spent
        with its consumer. A decode stream is a generator: between handing out an update (started / progress /
        finished) and being resumed, the consumer's work (the app turning a pass into views, a slow reader) runs
        on the same clock, and a decoder that yields once per pass would be charged for it per pass: the standard
        decoder five times as often as SPOT with five times fewer passes. The pause ends at the first clock
        reading after the resume (a pass's start; the loop's few checks before it are not counted, alike for
        every decoder)."""
        now = self._clock()
        if self._handed_out is not None:
            self.paused_s += now - self._handed_out
            self._handed_out = None
        return now - self.paused_s

    def _hand_out(self, progress: "Progress") -> "Progress":
        self._handed_out = self._clock()
        return progress

    def masked(self, lo: int, hi: int, row: torch.Tensor | None = None) -> torch.Tensor:
        r = self.tokens if row is None else row
        return r[lo:hi] == self.mask_id

    def finished_with_eos(self, hi: int, row: torch.Tensor | None = None) -> bool:
        """Whether the text (of the row, or of `row`, a state of it) has ended before position hi."""
        eos = self.target.info.eos_ids
        gen = (self.tokens if row is None else row)[self.prompt_len : hi]
        return any(bool((gen == e).any()) for e in eos)

    def generated(self) -> list[int]:
        """The text so far: the generated tokens up to the first still masked position or end of text (streamed
        counters count these; a window being decoded counts up to its first masked slot)."""
        gen = self.tokens[self.prompt_len :].tolist()
        eos = set(self.target.info.eos_ids)
        for i, t in enumerate(gen):
            if t in eos or t == self.mask_id:
                return gen[:i]
        return gen

    def apply(self, commits: list[Commit]) -> None:
        """Write committed tokens into the row (only the changed positions)."""
        if commits:  # (through numpy: the row is a CPU tensor, and a torch index write costs five times as much)
            self.tokens.numpy()[[c.position for c in commits]] = [c.token for c in commits]

    def begin_passes(self) -> None:
        """Start the run's clock at its first pass: what came before (loading the drafter, measuring the cost
        curve) is one-time set-up, kept apart in `setup_s` (RunMeta.outside_s), not in the run's wall time."""
        now = self.wall()
        self.setup_s += now - self.t0
        self.t0 = now

    def add_pass(self, kind: str, window, states: int, commits: list[Commit], t_start: float, tree=None,
                 accepted_path=None, budget: int = 0, two_windows: bool = False, walk_end: str = "") -> PassRecord:
        checks, self._checks_counted = self.checks_s - self._checks_counted, self.checks_s  # (this pass's checks)
        rec = PassRecord(index=len(self.passes), kind=kind, window=[int(window[0]), int(window[1])],
                         states=int(states), commits=commits, tree=tree or [], accepted_path=accepted_path or [],
                         wall_s=self.wall() - t_start - checks, budget=int(budget),
                         two_windows=bool(two_windows), walk_end=walk_end, forward_s=self.forward_wall)
        self.forward_wall = 0.0
        self.passes.append(rec)
        self.stats.observe(rec)
        return rec

    def counters(self) -> Counters:
        wall = self.wall() - self.t0 - self.checks_s  # decoding time: one-time checks are not in it
        n_pass = len(self.passes)
        gen = len(self.generated())
        s = self.stats
        return Counters(target_passes=n_pass, commits=s.num_commits, generated_tokens=gen,
                        drafted_nodes=s.num_draft_tokens, accepted_drafts=s.num_accepted_tokens,
                        mean_accepted_length=s.num_commits / max(n_pass, 1),
                        acceptance_per_depth=s.acceptance_per_depth(), wall_s=wall,
                        tokens_per_s=gen / wall if wall > 0 else 0.0)

    def meta(self, drafter: str | None = None) -> RunMeta:
        """The run's description (the same for the start event and the trace, but for what the run's end knows:
        forward_calls_outside, outside_s and identity_guaranteed)."""
        info = self.target.info
        cfg = self.cfg
        drafter = cfg.drafter if drafter is None else drafter
        spec = drafter != "none"
        return RunMeta(model=info.name, tokenizer=info.name, attention=info.attention, mode=cfg.mode,
                       threshold=float(cfg.rule.threshold), temperature=float(cfg.temperature), seed=int(cfg.seed),
                       drafter=drafter, budget=(0 if self.budget_auto else int(cfg.budget)) if spec else 0,
                       block_size=info.block_size, gen_length=cfg.gen_length, prompt=self.prompt,
                       prompt_tokens=self.tokens[: self.prompt_len].tolist(), coupled_noise=bool(cfg.coupled_noise),
                       cross_window=trees_may_cross(cfg, info) if spec else False,
                       min_path_prob=float(cfg.min_path_prob) if spec else 0.0,
                       device=str(self.target.device), mask_id=int(self.mask_id), spotviz_version=__version__,
                       prompt_truncated=self.truncated, budget_auto=self.budget_auto and spec,
                       cost_curve=self.cost_curve if spec else [],
                       cost_curve_two_windows=self.cost_curve_two_windows if spec else [],
                       threads=torch.get_num_threads(),
                       forward_calls_outside=self.calls_outside,
                       outside_s=round(self.setup_s + self.checks_s, 4),
                       identity_guaranteed=getattr(info, "batch_invariant", None) is True,
                       drafters=drafters_used(info.name, cfg.drafter_dir)
                       if drafter in PROPOSERS and PROPOSERS[drafter].fitted else "")

    def started(self, drafter: str | None = None) -> "Progress":
        """The start event: the run's meta and the prompt row, before the first pass."""
        return self._hand_out(Progress(self.tokens.tolist(), None, self.counters(), meta=self.meta(drafter)))

    def progress(self, rec: PassRecord, extra: dict | None = None) -> "Progress":
        """The update after a pass (handed out: the clock pauses until the stream is resumed)."""
        return self._hand_out(Progress(self.tokens.tolist(), rec, self.counters(), extra=extra or {}))

    def finished(self, drafter: str | None = None) -> "Progress":
        trace = self.trace(drafter)
        return self._hand_out(Progress(self.tokens.tolist(), None, trace.counters, trace=trace))

    def trace(self, drafter: str | None = None) -> Trace:
        meta = self.meta(drafter)
        gen = self.generated()
        ids = set(meta.prompt_tokens) | set(self.tokens.tolist()) | {self.mask_id}
        for p in self.passes:
            for n in p.tree:
                ids.update(n.tokens)
                ids.update(n.target_tokens)
        text_of = self.target.display_strings(ids)
        return Trace(meta=meta, passes=self.passes, tokens=gen, text=self.target.decode(gen),
                     counters=self.counters(), token_text={str(k): v for k, v in sorted(text_of.items())})


@dataclass
class Progress:
    """One streamed update: after each target pass, and a last one carrying the trace."""

    tokens: list[int]  # the whole row (prompt + generated, MASK where undecided)
    record: PassRecord | None
    counters: Counters
    trace: Trace | None = None
    extra: dict = field(default_factory=dict)
    meta: RunMeta | None = None  # set on the start event only

    @property
    def kind(self) -> str:
        """"start" (meta set, before the first pass), "pass" (record set) or "done" (trace set)."""
        return "done" if self.trace is not None else "pass" if self.record is not None else "start"


def run_to_end(stream: Iterator[Progress]) -> Trace:
    """Consume a decode stream; return its trace."""
    last = None
    for last in stream:
        pass
    return last.trace
