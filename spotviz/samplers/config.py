"""A decode's configuration: DecodeConfig (one run, end to end; its one validator), the Limits it is checked
against, and the checks of a prompt (encode_prompt)."""
from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field

from ..decision import MODES, DecisionRule
from ..errors import DecodeError  # defined in the core; front ends import it from here
from ..targets.base import DiffusionTarget

MAX_GEN_LENGTH = 1024
MAX_PROMPT_CHARS = 20_000
BUDGETS = (1, 2, 4, 8, 16, 32, 64, 128)
MAX_BUDGET = 256
MAX_TEMPERATURE = 10.0  # the highest any run may use (the app allows less: its Limits)
AUTO = "auto"  # budget chosen per pass from the target's cost curve (samplers/auto_budget.py)


@dataclass(frozen=True)
class Limits:
    """The ranges a decode is checked against. The library's defaults are the widest; a front end (the app) passes
    narrower ones (its menus), so that one validator serves every caller."""

    gen_max: int = MAX_GEN_LENGTH
    temperature_max: float = MAX_TEMPERATURE
    budgets: tuple | None = None  # the fixed budgets allowed (None: any from 1 to MAX_BUDGET); "auto" always is
    drafters: tuple | None = None  # the drafters allowed (None: every registered one)


@dataclass(frozen=True)
class DecodeConfig:
    """One run, end to end. Checked once, when it is made (`validate`, the one validator); frozen, so it stays
    valid: no layer checks it again or rebuilds it (dataclasses.replace makes a checked variant)."""

    mode: str = "exact"  # "exact" or "threshold"
    threshold: float = 0.9
    temperature: float = 0.0
    seed: int = 0
    gen_length: int = 128
    drafter: str = "none"
    budget: int | str = AUTO  # states a pass's tree may have evaluated: a count, or "auto" (cost-aware, per pass)
    coupled_noise: bool = True  # ablation switch for drafters at T > 0
    cross_window: bool = True  # exact mode: draft trees may go on past the window's end (False: they stop there)
    min_path_prob: float = 0.0  # prune draft nodes whose path probability is below this (0: fill the budget)
    drafter_dir: str | None = None  # drafters trained by train-drafter (None: the model's shipped ones, drafter/store.py)
    limits: Limits = field(default=Limits(), repr=False, compare=False)  # the ranges it was checked against

    def __post_init__(self):
        # numbers of other types (numpy's int64 / float32 of a sweep, a path object) stored as the plain ones the
        # run records: the same value, checked below like any other
        for name, whole in (("seed", True), ("gen_length", True), ("budget", True), ("temperature", False),
                            ("threshold", False), ("min_path_prob", False)):
            v = getattr(self, name)
            if isinstance(v, numbers.Integral) and not isinstance(v, (bool, int)):
                object.__setattr__(self, name, int(v))
            elif not whole and isinstance(v, numbers.Real) and not isinstance(v, (bool, int, float)):
                object.__setattr__(self, name, float(v))
        if isinstance(self.drafter_dir, os.PathLike):
            object.__setattr__(self, "drafter_dir", os.fspath(self.drafter_dir))
        self.validate()

    def validate(self) -> None:
        """Check every field against `limits` (and the drafter against the mode); raise DecodeError with a message
        for the user. Called once, by the constructor."""
        from ..drafter.registry import PROPOSERS, check_drafter

        limits = self.limits

        def num(name, kind):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, kind):
                whole = kind is int and isinstance(v, float)
                raise DecodeError(f"{name} must be a {'whole ' if whole else ''}number, got {v!r}")
            return v

        num("gen_length", int)
        num("seed", int)
        t, tau = num("temperature", (int, float)), num("threshold", (int, float))
        if self.mode not in MODES:
            raise DecodeError(f"mode must be 'exact' or 'threshold', got {self.mode!r}")
        if not 1 <= self.gen_length <= limits.gen_max:
            raise DecodeError(f"gen_length must be between 1 and {limits.gen_max}, got {self.gen_length}")
        if not (0.0 <= t <= limits.temperature_max) or t != t:
            raise DecodeError(f"temperature must be between 0 and {limits.temperature_max:g}, got {t}")
        if not (0.0 < tau <= 1.0):
            raise DecodeError(f"threshold (tau) must be in (0, 1], got {tau}")
        if not 0 <= self.seed < 2**63:
            raise DecodeError(f"seed must be a whole number from 0 to {2**63 - 1}, got {self.seed}")
        mp = num("min_path_prob", (int, float))
        if not (0.0 <= mp < 1.0):
            raise DecodeError(f"min_path_prob must be in [0, 1), got {mp}")
        if self.budget != AUTO:
            if isinstance(self.budget, bool) or not isinstance(self.budget, int):
                shown = self.budget if isinstance(self.budget, (int, float)) else repr(self.budget)
                raise DecodeError(f"budget must be {AUTO} or a whole number between 1 and {MAX_BUDGET} nodes, got "
                                  f"{shown}")
            if limits.budgets is not None and self.budget not in limits.budgets:
                raise DecodeError(f"tree budget must be {AUTO} or one of {', '.join(map(str, limits.budgets))}, "
                                  f"got {self.budget}")
            if not 1 <= self.budget <= MAX_BUDGET:
                raise DecodeError(f"budget must be {AUTO} or a whole number between 1 and {MAX_BUDGET} nodes, got "
                                  f"{self.budget}")
        if not isinstance(self.coupled_noise, bool):
            raise DecodeError(f"coupled noise must be true or false, got {self.coupled_noise!r}")
        if not isinstance(self.cross_window, bool):
            raise DecodeError(f"cross_window must be true or false, got {self.cross_window!r}")
        if self.drafter_dir is not None:
            from pathlib import Path

            if not isinstance(self.drafter_dir, str) or not Path(self.drafter_dir).expanduser().is_dir():
                raise DecodeError(f"drafter_dir must be a folder of trained drafters (train-drafter --out), "
                                  f"got {self.drafter_dir!r}")
        allowed = ("none", *PROPOSERS) if limits.drafters is None else limits.drafters
        if self.drafter not in allowed:
            yours = " (a drafter of your own: drafter.registry.register_proposer)" if limits.drafters is None else ""
            raise DecodeError(f"unknown drafter {self.drafter!r}; choose one of {', '.join(allowed)}{yours}")
        if self.drafter != "none":
            check_drafter(self.drafter, self.mode)

    @property
    def rule(self) -> DecisionRule:
        """The decision rule. tau belongs to threshold mode: an exact run's rule holds the rule's default tau, whatever
        the config says, so an exact decode is the same run at every tau (the drafters read tau among their inputs,
        and their exact-mode trajectories were collected at the default)."""
        if self.mode == "threshold":
            return DecisionRule(self.mode, float(self.temperature), float(self.threshold))
        return DecisionRule(self.mode, float(self.temperature), DecodeConfig.threshold)


def trees_may_cross(cfg: DecodeConfig, info) -> bool:
    """Whether a run's draft trees may go on past a window's end: asked for (cross_window), exact mode (threshold
    mode's next-window sets are never drafted exactly, docs/DESIGN.md section 3) and a target whose window logits
    do not depend on how far a call reaches (TargetInfo.blockwise_exact)."""
    return bool(cfg.cross_window and cfg.mode == "exact" and info.blockwise_exact)


def check_prompt(prompt) -> None:
    """The prompt's own checks (text, not empty, not too long): DecodeError with the message for the user."""
    if prompt is not None and not isinstance(prompt, str):
        raise DecodeError(f"the prompt must be text (a str), got {type(prompt).__name__}")
    if prompt is None or not prompt.strip():
        raise DecodeError("the prompt is empty: type some text to continue")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise DecodeError(f"the prompt is {len(prompt)} characters; the limit is {MAX_PROMPT_CHARS}")


MIN_ROOM = 64  # the shortest generation longest_generation offers (a quarter of the context at most)


def longest_generation(target: DiffusionTarget, prompt: str, limit: int) -> int:
    """The longest generation, at most `limit`, that `target`'s context leaves after `prompt`, but at least
    MIN_ROOM (a quarter of the context at most): a prompt too long for that loses its beginning (encode_prompt keeps
    its end), rather than an answer cut to a few tokens. The CLI lowers --gen-length to it, the app its slider."""
    context = int(target.info.max_length)
    n_prompt = len(target.encode(prompt)) if isinstance(prompt, str) and prompt.strip() else 1
    return min(int(limit), max(context - max(n_prompt, 1), min(MIN_ROOM, context // 4)))


def encode_prompt(target: DiffusionTarget, prompt: str, gen_length: int) -> tuple[list[int], bool]:
    """Token ids of the prompt; keeps the last tokens (and says so) if prompt + generation exceed the context."""
    check_prompt(prompt)
    room = target.info.max_length - gen_length
    if room < 1:
        raise DecodeError(f"gen_length {gen_length} leaves no room for a prompt: "
                          f"{target.info.name} has a context of {target.info.max_length} tokens")
    ids = target.encode(prompt)
    if not ids:
        raise DecodeError("the prompt encodes to no tokens")
    if target.info.mask_id in ids:  # a MASK in the prompt would be decoded, overwriting the prompt
        raise DecodeError("the prompt contains the mask token; remove it")
    if len(ids) > room:
        return ids[-room:], True
    return ids, False
