"""The calibrated proposer: a static draft-graph template fitted offline (train-drafter writes calibrated.json)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..features import first_depth_candidates
from ..numpy_forward import STALE_SLOPE, np_sigmoid
from ..tree import Proposer
from .common import Context, exact_children, set_children


class Calibrated(Proposer):
    """A static draft-graph template: the probability that the true decision at depth d is the r-th ranked
    remaining position (by stale confidence) with the stale token, calibrated offline on calibration prompts.
    Best-first growth with these static probabilities maximises the expected accepted length under the budget
    (assuming independent acceptances). Threshold mode: inclusion q = sigmoid(a_d * (log c - log tau) + b_d)."""

    def __init__(self, table: dict):
        self.rank_probs = [np.asarray(r, dtype=np.float64) for r in table["rank_probs"]]  # [depth][rank]
        self.set_params = table.get("set_params") or [[STALE_SLOPE, 0.0]]  # [depth][a, b]
        if not self.rank_probs or any(r.ndim != 1 for r in self.rank_probs):
            raise ValueError("rank_probs must be a non-empty list of per-depth lists of probabilities")
        if np.asarray(self.set_params, dtype=np.float64).ndim != 2 or len(self.set_params[0]) != 2:
            raise ValueError("set_params must be a list of [a, b] pairs")

    @classmethod
    def load(cls, path: str | Path) -> "Calibrated":
        p = Path(path)
        try:
            return cls(json.loads(p.read_text()))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise ValueError(f"calibration file {p} is missing or malformed: {e}") from None

    def prepare(self, view, max_depth):
        return Context(view, max_depth)

    def first_child(self, view, remaining):
        """The likeliest child of s1 in exact mode (None in threshold mode): the first-depth ranks ordered by the
        root's confidence in the coupled best token, as `children` does, computed only at the masked offsets."""
        if view.rule.mode != "exact":
            return None
        offs = np.flatnonzero(remaining).tolist()
        tok1, logc = first_depth_candidates(view, offs)
        row = self.rank_probs[0][: len(offs)].astype(np.float32)  # (float32, as children's: the same probability)
        order = np.argsort(-np.exp(logc), kind="stable")[: len(row)]  # positions by rank (confidence, as Context's)
        if not len(row) or row.max() <= 0:
            return []
        best = int(order[row == row.max()].min())  # (of equally likely ranks the lowest offset, as exact_children)
        return [((offs[best],), (int(tok1[best]),), float(row.max()))]

    def children(self, ctx, view, node, remaining):
        d = ctx.d(node)
        if view.rule.mode == "exact":
            row = self.rank_probs[min(d, len(self.rank_probs) - 1)]
            c = np.where(remaining, ctx.conf[d], -1.0)
            order = np.argsort(-c, kind="stable")[: min(int(remaining.sum()), len(row))]
            probs = np.zeros_like(c)
            probs[order] = row[: len(order)]
            return exact_children(ctx, node, probs, None, self.branch_positions)
        a, b = self.set_params[min(d, len(self.set_params) - 1)]
        return set_children(ctx, node, np_sigmoid(a * (ctx.logc[d] - math.log(view.rule.threshold)) + b), remaining)
