"""Proposers (candidate generators) for draft trees, one per file: training-free, calibrated, and the learned SPOT
drafter (SPOT-Sets in threshold mode); common.py holds what they share (the per-pass context of coupled-noise
tokens and root confidences, and the children of a node in exact and threshold mode).

All of them read only the root's output distributions (and the step-indexed noise), and all are verified by
the same one-pass verifier (samplers/verify.py), so every one of them is lossless; they differ only in how many
commits a pass makes. Per-node work runs in numpy on window-sized vectors (tree building is on the hot path of
every pass).
"""
from .calibrated import Calibrated
from .spot import SpotProposer
from .training_free import TrainingFree

__all__ = ["Calibrated", "SpotProposer", "TrainingFree"]
