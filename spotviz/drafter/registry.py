"""The proposer registry: every drafter the library knows, by name, with the modes it serves and how to load it.

One table replaces the lists and if-chains that front ends would otherwise repeat (the CLI's --drafter choices,
the app's menu, the bench's choice of the learned drafter per mode, the store's loader). Importing it is cheap:
loaders import their modules when called.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import DecodeError


@dataclass(frozen=True)
class ProposerSpec:
    name: str
    modes: tuple[str, ...]  # decision-rule modes it drafts for
    help: str
    load: Callable  # (target, mode, folder or None) -> Proposer
    learned: bool = False  # a trained drafter shipped per target (assets/drafters/<model>/<name>/)
    fitted: bool = False  # reads files fitted to a target (a learned drafter's weights, the calibrated template)


def _training_free(target, mode, folder):
    from .proposers import TrainingFree

    return TrainingFree()


def _calibrated(target, mode, folder):
    from .store import load_calibrated

    return load_calibrated(target, folder)


def _learned(name):
    def load(target, mode, folder):
        from .store import load_learned

        return load_learned(name, target, folder, mode)

    return load


PROPOSERS: dict[str, ProposerSpec] = {p.name: p for p in (
    ProposerSpec("spot", ("exact",), "the learned SPOT drafter (pointer head, hedged by the calibrated template): "
                 "exact mode", _learned("spot"), learned=True, fitted=True),
    ProposerSpec("spot-sets", ("threshold",), "the learned SPOT-Sets drafter (set head, hedged by the stale rule): "
                 "threshold mode", _learned("spot-sets"), learned=True, fitted=True),
    ProposerSpec("training-free", ("exact", "threshold"), "stale-confidence order from the previous pass",
                 _training_free),
    ProposerSpec("calibrated", ("exact", "threshold"), "a static draft-graph template calibrated offline",
                 _calibrated, fitted=True),
)}


def check_drafter(name: str, mode: str) -> ProposerSpec:
    """The spec of `name`, or a DecodeError saying which drafter serves `mode`."""
    spec = PROPOSERS.get(name)
    if spec is None:
        raise DecodeError(f"unknown drafter {name!r}; choose one of none, {', '.join(PROPOSERS)}")
    if mode not in spec.modes:
        other = [p.name for p in PROPOSERS.values() if mode in p.modes and p.learned == spec.learned]
        raise DecodeError(f"drafter {name!r} is for {' or '.join(spec.modes)} mode; "
                          f"use {' or '.join(other)} in {mode} mode")
    return spec


def learned_drafter(mode: str) -> str:
    """The name of the learned drafter for a mode (spot in exact mode, spot-sets in threshold mode)."""
    return next(p.name for p in PROPOSERS.values() if p.learned and mode in p.modes)


def load_proposer(name: str, target, mode: str, folder=None):
    """A ready proposer for `target` in `mode` (folder: a drafter folder other than the shipped one)."""
    return check_drafter(name, mode).load(target, mode, folder)
