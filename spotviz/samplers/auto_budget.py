"""`budget: auto`: size each pass's draft tree for expected commits per second, or draft nothing where drafting does
not pay; f(N) is the target's forward cost curve (samplers/forward_cost.py). Why each choice below was made, with
the measurements: docs/wallclock.md (section "What `auto` is made of, and why").

**Sizing a tree.** A SPOT pass that evaluates N states costs about l_N f(N) + c and commits 1 + the accepted edges
(its tree may hold more nodes: known states are decided from stored logits, drafter/tree.py).
With nodes in best-first order (path probabilities p_1 >= p_2 >= ...) every prefix of the tree is a tree, and

    E(N) = 1 + s_r(1) p_1 + ... + s_r(N-1) p_{N-1}

are the expected commits of its first N nodes (p_i as it was when node i was added, so the estimate errs low; s_r a
running calibration per rank r(i) = floor(log2 i) of a node in best-first order: the edges into nodes of that rank
that acceptance walks took, over the path probabilities of those nodes, from a prior of the drafter's overall
calibration s, accepted drafted edges over expected ones, weighing RANK_PRIOR expected edges). Path probabilities
are products of a drafter's edge probabilities, and acceptances along a path are not independent: on math-bd (SPOT,
budget 16, T = 0, 12 problems) nodes 1-4 took 94-99% of the edges their path probabilities promised, nodes 9-16
128-130%; one s for all ranks sized trees a third smaller than the best fixed budget where the forward is flat (the
simulated H200, session 53). CostAwareBudget keeps the prefix
N >= 2 that maximises E(N) / (l_M f(M) + c), M the states the prefix has the target evaluate: its known states
(decided from logits an earlier pass stored, drafter/tree.py) add to E and cost no forward. Growth stops when no
longer prefix can win even if every node still to come cost a state (with free nodes among them it might: the
bound errs towards smaller trees).

**Keeping the curve honest during a run.** l_N = L s_N. The load L is the running mean of a standard pass's
forward time over f(1) (the machine's speed now); s_N (N >= 2) is the running mean of that size's forward times
over f(N), each over the load when it ran (the curve's shape as this run sees it; s_1 = 1, PRIOR_SHAPE until a size
is seen twice). While a size goes unseen, s_N fades back to the prior (STALE a pass). A one-state forward right
after a batched one runs slower on a CPU: its excess over f(1) is charged to the drafting tier's own work and kept
out of L.

**Whether to draft at all**, decided before the drafter runs, from the stale confidences the previous pass
computed (c_(1) >= c_(2) >= ... over the positions still masked). Drafted passes come in two tiers, one-guess trees
(N = 2, which a proposer may draft without the drafter's forward) and larger trees; each keeps its own work, a
running linear fit against the states evaluated (c_N = mean + w (N - mean states); the slope w over about 20 passes,
the means over about 5: a slope fitted as fast was noisy, and clipped at zero it erred high, which cut trees short on
a flat curve; a tier's first pass sets its means outright, its prior being a guess, a tenth of a forward). Until the
passes of larger trees have spread over sizes, how their work grows is unknown, and a larger tree is capped at
SLOW_START states, later at twice the tier's usual size (on a flat curve a tree priced at its prior work grew to the
budget: SPOT-Sets on the simulated H200 drafted trees of 18-64 states, 8.5-20 ms of own work beside a 3.3 ms
forward, with the prior creeping up threefold a pass). The gate compares three rates
of commits per second: a standard pass, 1 / (l_1 f(1) + c_1) (c_1 a standard pass's own work); one guess,

    G(2) = 1 + s_1 g_(1)          over l_2 f(2) + c_2,       g_(i) = h + (1 - h) c_(i)

(s_1: the one-guess tier's calibration, its accepted edges over the g_(1) of its passes; prior 1 weighing GATE_PRIOR
expected edges; h = ONE_GUESS_FLOOR, below); and a larger tree of the size M its passes evaluate (their running mean,
rounded, at least 3, at most n_max),

    G(M) = 1 + A                   over l_M f(M) + c_M

A the running mean of the accepted edges of the larger trees' passes (one mean, whatever their sizes), from a prior
of the chain at M, g_(1) + g_(1) g_(2) + ... + g_(1) ... g_(M-1), weighing GATE_PRIOR_PASSES passes, its evidence
capped at GATE_PASSES passes. The pass drafts only if one of the trees beats a standard pass; otherwise it is a
standard pass (no drafter, tree or record), costing what the standard decoder's pass costs. When one guess is best,
the tree is capped at 2 nodes before anything is drafted; else the builder sizes the tree (its budget is not capped,
so the trees it keeps move M). Why a mean for larger trees and not the chain: on a confident model the chain's stale
confidences are all near 1, and it does not predict what a larger tree accepts (simulated H200, 20 problems, N=16:
correlation -0.02 between the chain and the accepted edges; a tree accepts about 4 edges where the chain says 3 or
15): priced by the chain, larger trees lost to one guess on every pass with a short chain.

Why g_(1) and not c_(1) for one guess: c_(1) is the probability of the stale token, not the chance that the target's
next decision stays the one the root points to, and on a low-confidence model the guess is accepted far more often
than c_(1) says (python-bd, budget 2, 20 held-out prompts: accepted in 50% of passes at T = 0 and 58% at T = 1, where
the median c_(1) is 0.17 and 0.07; by fifths of c_(1), 0.39 / 0.44 / 0.49 / 0.48 / 0.72 at T = 0 and 0.65 / 0.57 /
0.52 / 0.52 / 0.65 at T = 1). Priced as s_1 c_(1), one guess looked worth about 1.07 commits there, so `auto` drafted
87 of 2,316 passes at T = 1 where drafting every pass is 7% faster, and s_1 could not learn otherwise from the few
passes it drafted. On math-bd c_(1) is 1 on most passes and either form gives s_1 = 0.74. h is the best single value
of the log-likelihood of those passes' acceptances over the four runs (python-bd and math-bd, T = 0 and 1): h = 0
the worst on each; 0.25-0.5 best at T = 0, 0.6-0.75 at T = 1; 0.5 within 0.016 nats of each run's best.

On every pass that drafts none of a tier's trees, the two-window pass at a window's end aside, that tier's evidence
fades back to its prior by GATE_FADE (only its own passes renew it, and a tier priced out by a few bad passes would
otherwise be shut out for good).

**The realized check.** Each drafted pass's time against what standard passes would have taken for its decisions now
(accepted edges + 1, each a standard pass: x (l_1 f(1) + a standard pass's own work), plus l (f_fused(1) - f(1)) for a
fused pass), summed with decay DECAY (about the last 20 drafted passes). A tier pauses only when the sum is below
minus its own scatter (the square root of the decayed sum of squared terms), for PAUSE passes, doubling at each
repeat up to MAX_PAUSE and halving when drafting pays; after a pause the gate decides again. A run's loss is bounded
by its probes.

**Memory.** What a run learned (the drafter's calibration, overall and per rank, each tier's estimates for the gate,
work, realized sums and pause, the load and shapes) is kept for the next run of the same target, drafter (and its
folder), mode and temperature: in the process, and for a named model in the user cache beside its cost curve
(memory_file), with the calibration counts capped so that they keep adapting (the overall one at CARRIED_WEIGHT
expected edges; a rank's at RANK_CAP in a run and across runs alike: a deep rank sees a few edges a pass, so it
needs more of them than the overall calibration does to settle).

FixedBudget (drafter/tree.py) is the fixed count of states evaluated: it always drafts and keeps every node it grows.
"""
from __future__ import annotations

import hashlib
import json
import math
import weakref
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from ..drafter.tree import ONE_GUESS, BudgetPolicy, FixedBudget
from . import forward_cost
from .forward_cost import CostCurve, cost_curve, curve_key, write_cache_file

# target -> {(drafter, mode, temperature, ...) -> what `auto` learned in its last run}; keyed by the target object
# itself, weakly (a new target may reuse a freed one's id(), and must not inherit what that one learned)
_LEARNED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
MEMORY_VERSION = 7  # of the files that carry it to the next process (memory_file); older ones are ignored (2: the
# per-size corrections are shapes against the load, session 34; 3: a chain calibration per tier, session 43; 4: the
# larger trees' mean accepted edges, session 44; 5: the calibration per rank, session 53; 6: one guess calibrated
# against g, not c_(1), session 55; 7: the realized check in decisions, session 56)


GATE_PRIOR = 6.0  # the one-guess tier's calibration starts at s_1 = 1, weighing as much as six expected edges
ONE_GUESS_FLOOR = 0.5  # h: one guess is priced at s_1 (h + (1 - h) c_(1)) accepted edges, the chain alike (module
# docstring)
GATE_PRIOR_PASSES = 2.0  # larger trees' mean accepted edges starts at the chain's, weighing as much as two passes
GATE_PASSES = 40.0  # the evidence of that mean is capped at this many passes (it follows the text as it goes)
RANKS = 7  # ranks of a node in best-first order calibrated apart: 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64 and more
RANK_PRIOR = 4.0  # a rank's calibration starts at the drafter's overall one, weighing as much as four expected edges
RANK_CAP = 200.0  # a rank's evidence is capped at this many expected edges (it follows the text as it goes)


def rank_of(i: int) -> int:
    """The calibrated rank of the i-th node in best-first order (i >= 1; s1 is node 0): 0 for node 1, 1 for 2-3,
    2 for 4-7, ..."""
    return min(i.bit_length() - 1, RANKS - 1)


@dataclass
class PassOutcome:
    """What a budget policy learns from one pass."""

    states: int  # states the forward evaluated (1: a standard pass, or a tree whose other nodes were known states)
    forward_s: float  # time of the target pass (on pass_clock)
    fused: bool  # the pass also evaluated the next window
    accepted_edges: int = 0
    overhead_s: float = 0.0  # the pass's time outside the forward
    drafted: bool = False
    walk: tuple = ()  # the ids of the tree's nodes the acceptance walk went through, s1 (0) left out


@dataclass
class Tier:
    """One kind of drafted pass (a one-guess tree, or a larger tree): its own work outside the forward, a running
    linear fit in the states its passes evaluate (a tree's node count, less its known states), the gate's estimate
    of its accepted edges (one guess: a chain calibration; larger trees: a mean; each tier keeps only its own, the
    other's fields stay at their priors), and its realized check (module docstring)."""

    overhead: float  # seconds: the running mean of its passes' own work
    # how that work grows with the tree: running mean of the passes' state counts, and the running (co)variance of
    # state count and work, whose ratio is the work per extra state (per_node)
    states: float = 2.0
    var: float = 0.0
    cov: float = 0.0
    saved_s: float = 0.0  # decayed sum over its passes of (standard passes' time for their decisions - theirs)
    saved_sq: float = 0.0  # the same sum's noise: decayed (DECAY^2) sum of each pass's term squared
    passes: int = 0
    pause: int = 0  # passes left before the gate may draft this tier again
    backoff: int = 4  # the next pause
    # one guess: the gate's calibration s_1, its passes' accepted edges over the g they were priced by (module
    # docstring), from a prior of 1 weighing GATE_PRIOR expected edges
    chain_expected: float = GATE_PRIOR
    chain_accepted: float = GATE_PRIOR
    # larger trees: the gate's running mean of their accepted edges, the sum and the passes it holds (faded, capped
    # at GATE_PASSES), beside a prior of GATE_PRIOR_PASSES passes of the chain (module docstring)
    edges_accepted: float = 0.0
    edges_passes: float = 0.0

    def mean_edges(self, prior: float) -> float:
        """The gate's estimate of the edges a pass of this tier accepts: its passes' mean, from `prior`."""
        return (self.edges_accepted + GATE_PRIOR_PASSES * prior) / (self.edges_passes + GATE_PRIOR_PASSES)

    MIN_VAR = 1.0  # state counts must spread by about one state before a slope is trusted

    @property
    def slope_known(self) -> bool:
        """Whether its passes' sizes have spread enough to trust a slope (until then larger trees grow step by step:
        CostAwareBudget.draft_now)."""
        return self.var >= self.MIN_VAR

    @property
    def per_node(self) -> float:
        """Seconds of own work per node beyond the mean tree (0 until the passes' sizes spread; never negative)."""
        return max(self.cov / self.var, 0.0) if self.slope_known else 0.0

    def cost(self, n):
        """Its own work for a tree that evaluates n states (n: a number or an array): overhead + per_node (n - states),
        >= 0."""
        if isinstance(n, np.ndarray):
            return np.maximum(self.overhead + self.per_node * (n - self.states), 0.0)
        return max(self.overhead + self.per_node * (n - self.states), 0.0)  # (a number: no numpy call, every pass)

    STEP = 0.2  # of its running means: one pass moves them a fifth of the way
    SLOPE_STEP = 0.05  # of the (co)variance behind per_node: a slope needs more passes than a mean

    def learn(self, n: int, seconds: float) -> None:
        """One pass of n states took `seconds` of own work. The tier's first pass sets its means (the prior is a guess,
        on a GPU far too low), with no slope yet (a prior is no point to fit one through); later passes move the
        running means and (co)variance, a slow one (e.g. a first call) at most threefold."""
        if self.passes == 0:
            self.states, self.overhead, self.var, self.cov = float(n), seconds, 0.0, 0.0
            return
        seconds = min(seconds, 3 * self.cost(n))
        a = self.STEP
        dn, do = n - self.states, seconds - self.overhead
        self.states += a * dn
        self.overhead += a * do
        b = a * self.SLOPE_STEP / self.STEP
        self.var = (1 - b) * (self.var + b * dn * dn)
        self.cov = (1 - b) * (self.cov + b * dn * do)


class CostAwareBudget(BudgetPolicy):
    """`auto`: draft only when the stale confidences say it pays; keep the best-first prefix (N >= 2) with the
    most expected commits per second (module docstring; the interface is drafter/tree.BudgetPolicy)."""

    def __init__(self, curve: CostCurve, n_max: int = 64):
        self.budget = n_max  # this pass's cap: n_max or ONE_GUESS (set by draft_now)
        self.n_max = n_max
        self.curve = curve
        self.f = curve.table(n_max)
        self.f_fused = curve.table(n_max, fused=True)
        # (per-pass arithmetic on Python lists and floats: a pass's policy work is a few dozen numbers, where numpy's
        # per-call cost would dominate; numpy only for the stop test's vector over the sizes left, once per tree)
        self._f, self._ff = self.f.tolist(), self.f_fused.tolist()
        self._more = np.arange(n_max + 1)
        self._den = None  # this tree's f_now(m) + the tree tier's work at m, for every m (begin)
        self.one_guess = Tier(0.1 * self._f[1])  # trees capped at ONE_GUESS nodes
        self.tree = Tier(0.1 * self._f[1])  # larger trees
        self.small = False  # this pass's tree is capped at ONE_GUESS nodes
        self.load = 1.0  # running mean of a standard pass's forward time over f(1): the machine's speed now
        self.load_set = False  # whether this run's first standard pass has set it
        self.ratio = [1.0] * (n_max + 1)  # per size N >= 2: running mean of (forward time / f(N)) / load, the
        # curve's shape as this run sees it (non-fused passes), with how often each size was seen
        # the shape before a size is seen: PRIOR_SHAPE, but never pricing N states below one (a GPU's flat curve)
        self._prior = [1.0, 1.0] + [max(self.PRIOR_SHAPE, self._f[1] / self._f[n]) for n in range(2, n_max + 1)]
        self.count = 0  # passes observed in this run
        self.last = [0] * (n_max + 1)  # the pass at which each size was last seen (its correction's age)
        self.seen = [0] * (n_max + 1)
        self.expected = self.accepted = 1.0  # drafter calibration s = accepted / expected drafted edges
        # the same calibration per rank of a node in best-first order (ranks 1, 2-3, 4-7, ...: rank_of): what the
        # nodes of each rank expected and accepted, from a prior of RANK_PRIOR expected edges at s
        self.rank_expected = [0.0] * RANKS
        self.rank_accepted = [0.0] * RANKS
        self._s_rank = [1.0] * RANKS
        self._kept = None  # the nodes this tree kept (choose)
        self._p: list[float] = []  # this tree's nodes' path probabilities as they were added (s1's is not in it)
        self._chain = [0.0] * (n_max + 1)  # the chain estimate's expected edges for N - 1 = 0, 1, ... drafted nodes
        self._edges = [0.0]
        self.last_expected = self.last_chain = 0.0
        self.standard_over = 0.0  # running mean of a standard pass's time outside the forward (seconds)
        self.standard_seen = 0  # standard passes observed (the first sets the mean: a prior of 0 s errs)
        self._after = None  # the tier of the last pass, if it drafted (the next one-state pass's excess is its work)

    SLOW_START = 8  # a larger tree's cap while its tier's work per state is unknown (draft_now)
    PAUSE = 4  # the first pause (passes) after drafted passes were slower per commit than standard ones
    MAX_PAUSE = 64
    DECAY = 0.95  # of the realized check's sums (module docstring)
    CARRIED = ("expected", "accepted", "standard_over", "standard_seen", "load", "count")
    CARRIED_WEIGHT = 40.0  # calibration counts carried to the next run are scaled down to at most this many edges

    def remember(self) -> dict:
        """What this run learned, for the next run of the same kind (module docstring)."""
        return {**{k: getattr(self, k) for k in self.CARRIED},
                "one_guess": replace(self.one_guess), "tree": replace(self.tree),
                "ratio": list(self.ratio), "seen": list(self.seen), "last": list(self.last),
                "rank_expected": list(self.rank_expected), "rank_accepted": list(self.rank_accepted)}

    def recall(self, learned: dict) -> None:
        for k, v in learned.items():
            if isinstance(v, list):
                if len(v) == len(getattr(self, k)):  # (the curve's corrections: per size, as this run sizes them)
                    setattr(self, k, list(v))
            else:
                setattr(self, k, replace(v) if isinstance(v, Tier) else v)
        for obj, e, a in ((self, "expected", "accepted"), (self.one_guess, "chain_expected", "chain_accepted"),
                          (self.tree, "chain_expected", "chain_accepted")):
            scale = min(1.0, self.CARRIED_WEIGHT / max(getattr(obj, e), 1e-9))
            setattr(obj, e, getattr(obj, e) * scale)
            setattr(obj, a, getattr(obj, a) * scale)
        # (the larger trees' mean carries at most GATE_PASSES passes: observe caps it; a file could hold more)
        for t in (self.one_guess, self.tree):
            scale = min(1.0, GATE_PASSES / max(t.edges_passes, 1e-9))
            t.edges_accepted, t.edges_passes = t.edges_accepted * scale, t.edges_passes * scale

    def draft_now(self, stale_conf) -> bool:
        """Whether this pass should draft: not while a pause lasts (drafting was measured slower than standard
        passes), else if a one-guess tree or a larger tree of its tier's usual size beats a standard pass, each with
        its tier's own work and estimate (module docstring); the tree is capped at ONE_GUESS nodes when one guess is
        the best. (Plain Python: at most a window of numbers, on every pass, where numpy's per-call cost would
        dominate.)"""
        self.budget, self.small = self.n_max, False
        open_ = []
        for t in (self.one_guess, self.tree):
            open_.append(t.pause == 0)
            t.pause = max(t.pause - 1, 0)
        if not any(open_):
            return False
        # the sizes priced: one guess, and a larger tree of its tier's usual size M (none where n_max allows none)
        t = self.tree
        m = min(self.n_max, max(ONE_GUESS + 1, int(t.states + 0.5))) if self.n_max > ONE_GUESS else ONE_GUESS
        # the chain g_(1) + g_(1) g_(2) + ... up to M (one guess's estimate, the larger trees' prior; choose credits a
        # kept one-guess tree with it); past the positions there are, it promises no more edges
        chain, edges, path, k, h = self._chain, 0.0, 1.0, 0, ONE_GUESS_FLOOR
        for k, c in enumerate(sorted(stale_conf, reverse=True)[: m - 1], start=1):
            path *= h + (1.0 - h) * c
            edges += path
            chain[k] = edges
        chain[k + 1:] = [edges] * (len(chain) - k - 1)
        if k == 0:
            return False
        best, best_n = 1.0 / (self.f_at(1) + self.standard_over), 1  # a standard pass's commits per second
        if open_[0]:
            g = self.one_guess
            rate = (1.0 + g.chain_accepted / g.chain_expected * chain[1]) / (self.f_at(ONE_GUESS) + g.cost(ONE_GUESS))
            if rate > best:
                best, best_n = rate, ONE_GUESS
        if open_[1] and m > ONE_GUESS:
            if (1.0 + t.mean_edges(chain[m - 1])) / (self.f_at(m) + t.cost(m)) > best:
                best_n = m
        if best_n == ONE_GUESS:
            self.budget, self.small = ONE_GUESS, True
        elif not t.slope_known:  # (how its work grows is unknown yet: at most twice its usual size, SLOW_START first)
            self.budget = min(self.n_max, max(self.SLOW_START, 2 * int(t.states + 0.5)))
        return best_n > 1

    def begin(self, n_masked: int, s1_evaluated: bool = True) -> None:
        """A new tree: only s1 so far (outside the batch where it is a known state)."""
        self._s = s = self.accepted / self.expected
        self._s_rank = [(a + RANK_PRIOR * s) / (e + RANK_PRIOR) for e, a in zip(self.rank_expected, self.rank_accepted)]
        self._edges = [0.0]  # expected drafted edges of the first k nodes (path probabilities), k = 1, 2, ...
        self._gain = [0.0]  # the same, each node's calibrated by its rank: accepted edges expected
        self._p, self._kept = [], None
        self._batch = [int(s1_evaluated)]  # states the pass evaluates for the first k nodes (known states are free)
        self._best_k, self._best = 1, 0.0
        self._den = self.f_now + self.tree.cost(self._more) if self.budget > ONE_GUESS else None
        self._den_list = self._den.tolist() if self._den is not None else None  # (the same numbers, read one by one)

    def add(self, path_prob: float, free: bool = False) -> None:
        """The next best-first node was added with this path probability (free: a known state, outside the batch)."""
        self._gain.append(self._gain[-1] + self._s_rank[rank_of(len(self._edges))] * path_prob)
        self._edges.append(self._edges[-1] + path_prob)
        self._p.append(path_prob)
        self._batch.append(self._batch[-1] + (not free))
        k, m = len(self._edges), max(self._batch[-1], 1)
        den = self._den_list
        rate = (1.0 + self._gain[-1]) / (den[m] if den is not None and m < len(den) else
                                         self.f_at(m) + self._tier().cost(m))
        if rate > self._best:
            self._best_k, self._best = k, rate

    def stop(self, next_p: float) -> bool:
        """Growing stops when no larger prefix can beat the best so far, even if every further node had path
        probability `next_p` (the largest left: best-first order makes it an upper bound) and cost a state."""
        k, m = len(self._edges), self._batch[-1]
        if m >= self.budget:
            return True
        if k < 2 or self._den is None:
            return False
        s = max(self._s_rank[rank_of(k):])  # (the most a node still to come may be worth per unit of probability)
        gain, sp = self._gain[-1], s * next_p
        if m + 1 < len(self._den_list) and (1.0 + gain + sp) / self._den_list[m + 1] > self._best:
            return False  # (one more node would already beat the best: the usual answer, without the vector below)
        e = (1.0 + gain - sp * m) + sp * self._more[m + 1:]
        return bool((e / self._den[m + 1:]).max() <= self._best)

    def choose(self, n_nodes: int) -> int:
        """How many of the best-first nodes to keep: at least 2 (the drafter ran: a pass that drafts verifies
        something drafted), the best rate otherwise."""
        k = max(self._best_k, min(2, n_nodes))
        self._kept = k
        self.last_expected = self._edges[k - 1]
        self.last_chain = self._chain[min(k - 1, self.n_max)]  # (known states may take a tree past n_max nodes)
        return k

    def observe(self, o: PassOutcome) -> None:
        """After a pass: its forward time (rescales the curve to the machine's load now); after a drafted pass
        also its accepted edges (the drafter's calibration and its tier's estimates for the gate; the other tier's fade)
        and its time outside the forward."""
        n = min(o.states, self.n_max)
        f = (self._ff if o.fused else self._f)[n]
        self.count += 1
        after, self._after = self._after, None
        if after is not None and o.states == 1 and not o.fused:
            # a one-state forward right after a batch of states runs slower on a CPU (module docstring): drafting's
            # own work, counted into the tier that drafted as if its pass had paid it, and kept out of the curve
            after.overhead += Tier.STEP * max(o.forward_s - self.f_at(1), 0.0)
        elif o.forward_s > 0 and f > 0 and not o.fused and not (o.drafted and n == 1):
            # the load follows the machine's speed from the standard passes (the run's first sets it: a prior or
            # a past run's value would lag behind a spell; until then drafted passes move it a little); a size's
            # correction is its forwards' time against the load, so a spell moves every size's price at once
            # (a fused pass, two windows, teaches neither)
            r = min(max(o.forward_s / f, 0.25), 8.0)
            if n == 1:
                a = 0.2 if self.load_set else 1.0
                self.load = (1 - a) * self.load + a * r
                self.load_set = True
            elif self.load_set:
                rel = r / self.load
                self.ratio[n] = rel if self.seen[n] == 0 else 0.8 * self.ratio[n] + 0.2 * rel
                self.seen[n] += 1
                self.last[n] = self.count
            else:
                self.load = 0.9 * self.load + 0.1 * r / self.shape(n)
        if o.drafted:  # (a drafted pass may evaluate one state: its other nodes known states)
            self.expected += self.last_expected
            self.accepted += o.accepted_edges
            self._learn_ranks(o.walk)
            t = self._tier()
            if t is self.one_guess:  # (each tier renews the estimate the gate prices it by: module docstring)
                t.chain_expected += self.last_chain
                t.chain_accepted += o.accepted_edges
            else:
                t.edges_accepted += o.accepted_edges
                t.edges_passes += 1
                if t.edges_passes > GATE_PASSES:  # (from then on each pass weighs 1 / (GATE_PASSES + 1))
                    t.edges_accepted *= GATE_PASSES / t.edges_passes
                    t.edges_passes = GATE_PASSES
            self._fade(self.tree if t is self.one_guess else self.one_guess)
            t.learn(n, o.overhead_s)
            # (each decision the pass made, its accepted edges and its own, is one the standard decoder makes in a pass
            # of its own: exactly, in either mode; commits were no measure of that in threshold mode, where a
            # decision's set is smaller inside a window than at its start)
            standard = (o.accepted_edges + 1) * (self.f_at(1) + self.standard_over)
            if o.fused:
                standard += self.load * (self._ff[1] - self._f[1])
            x = standard - (o.forward_s + o.overhead_s)
            t.saved_s = self.DECAY * t.saved_s + x
            t.saved_sq = self.DECAY ** 2 * t.saved_sq + x * x
            t.passes += 1
            self._check_realized(t)
            self._after = t
        elif o.states == 1 and not o.fused:
            # the gate's calibrations fade back to their prior while nothing is drafted: evidence only drafted passes
            # can renew would otherwise outlive the passes that gave it (module docstring)
            self._fade(self.one_guess)
            self._fade(self.tree)
            a = 0.1 if self.standard_seen else 1.0
            self.standard_over = (1 - a) * self.standard_over + a * o.overhead_s
            self.standard_seen += 1
        self.last_expected = self.last_chain = 0.0
        self.budget, self.small = self.n_max, False

    def _learn_ranks(self, walk) -> None:
        """The rank calibration after a drafted pass: each kept node's path probability into its rank's expectation,
        each node the walk went through into its rank's accepted edges (capped at RANK_CAP expected edges a rank)."""
        k = len(self._p) if self._kept is None else self._kept - 1
        for i, p in enumerate(self._p[:k], start=1):
            self.rank_expected[rank_of(i)] += p
        for i in walk:
            if 1 <= i <= k:
                self.rank_accepted[rank_of(i)] += 1.0
        for r, e in enumerate(self.rank_expected):
            if e > RANK_CAP:
                self.rank_expected[r], self.rank_accepted[r] = RANK_CAP, self.rank_accepted[r] * RANK_CAP / e
        self._p, self._kept = [], None

    GATE_FADE = 0.995  # per pass that drafts none of a tier's trees: how fast its evidence above the prior fades
    STALE = 0.98  # per pass: how fast a size's own correction fades back to the prior while unseen
    PRIOR_SHAPE = 0.9  # s_N before a size is seen: batches of states cost ~10% less against one state inside decodes
    # than the cached curve measures them in isolation (math-bd and python-bd at N = 2-8 on two machines,
    # docs/wallclock.md), and a prior a little low gets a size tried, after which its own forwards price it (never
    # below one state's price: on a GPU's flat curve the prior is 1)

    def shape(self, n: int) -> float:
        """l_N / L: size n's correction relative to the load, once seen twice (else PRIOR_SHAPE), fading back to the
        prior while the size goes unverified (a size priced too dear after a few slow forwards, e.g. a spell's onset,
        would otherwise never be drafted again to correct it). 1 at n = 1 (the load is one state's)."""
        prior = self._prior[n]
        if n == 1 or self.seen[n] < 2:
            return prior
        return prior + (self.ratio[n] - prior) * self.STALE ** (self.count - self.last[n])

    def f_at(self, n: int) -> float:
        """f(n) as this run sees it now: L s_n f(n) (module docstring): the load L follows the machine's speed, the
        shape s_n is what the run measured of size n against it (the prior until then)."""
        return self.load * self.shape(n) * self._f[n]

    @property
    def f_now(self) -> np.ndarray:
        """f_at for every size 0..n_max."""
        prior, seen = np.asarray(self._prior), np.asarray(self.seen)
        faded = prior + (np.asarray(self.ratio) - prior) * self.STALE ** (self.count - np.asarray(self.last))
        faded[1] = prior[1]  # (shape, vectorised: size 1 is the load's, and a size seen less than twice its prior)
        return np.where(seen >= 2, faded, prior) * self.load * self.f

    def _fade(self, t: Tier) -> None:
        """A pass that drafted nothing of tier t: its estimates fade a step back towards their priors (only its own
        passes renew them, and a tier the gate no longer chooses would otherwise keep a low one for good)."""
        t.chain_expected = GATE_PRIOR + (t.chain_expected - GATE_PRIOR) * self.GATE_FADE
        t.chain_accepted = GATE_PRIOR + (t.chain_accepted - GATE_PRIOR) * self.GATE_FADE
        t.edges_accepted *= self.GATE_FADE
        t.edges_passes *= self.GATE_FADE

    def _tier(self) -> Tier:
        """The tier of this pass's tree."""
        return self.one_guess if self.small else self.tree

    def _check_realized(self, t: Tier) -> None:
        """After a drafted pass of tier t: pause that tier if its recent passes cost more time than standard passes
        would have for their commits, by more than their scatter (the pause doubles each time, up to MAX_PAUSE);
        halve its next pause when they saved time."""
        if t.passes < 3:
            return
        if t.saved_s < -math.sqrt(t.saved_sq):  # a loss beyond one standard deviation of the passes' own scatter
            t.pause, t.backoff = t.backoff, min(2 * t.backoff, self.MAX_PAUSE)
        else:
            t.backoff = max(self.PAUSE, t.backoff // 2)


def budget_policy(budget, target, memory: tuple | None = None, instance=None) -> BudgetPolicy:
    """The run's tree sizing: the fixed budget, or the cost-aware one (auto) with the target's cost curve, starting
    from what the last run under the same `memory` key learned (end a run with `remember_policy`): in this process
    (with the same drafter `instance`), else in an earlier process (memory_file)."""
    if budget != "auto":
        return FixedBudget(budget)
    curve = cost_curve(target)
    policy = CostAwareBudget(curve, n_max=min(64, max(curve.sizes)))
    if memory is not None:
        learned = _LEARNED.get(target, {}).get((instance, *memory)) or read_memory(memory_file(target, memory))
        if learned is not None:
            policy.recall(learned)
    return policy


def remember_policy(policy: BudgetPolicy, target, memory: tuple, instance=None) -> None:
    """Keep what an `auto` run learned for the next run of the same target under the same key: in this process,
    and in the user cache for the next process (a command line run is one process each)."""
    if isinstance(policy, CostAwareBudget):
        learned = _LEARNED.setdefault(target, {})[(instance, *memory)] = policy.remember()
        path = memory_file(target, memory)
        if path is not None:
            try:  # (the app may end several people's runs at once: write_cache_file never leaves half a file)
                write_cache_file(path, {"version": MEMORY_VERSION, "learned": {
                    k: asdict(v) if isinstance(v, Tier) else v for k, v in learned.items()}})
            except OSError:
                pass  # a read-only cache: this process remembers it all the same


def memory_file(target, memory: tuple) -> Path | None:
    """Where what `auto` learned in runs of one kind (`memory`: drafter, mode, temperature, ...) is kept between
    processes: beside the cost curves, under the curve's key (model, device and CPU kernels, dtype, threads); None
    where the curve is not cached (a model folder) or is simulated."""
    if getattr(target, "simulated_curve", None) is not None or not forward_cost.cacheable(target):
        return None
    digest = hashlib.sha1(repr(tuple(memory)).encode()).hexdigest()[:16]
    return forward_cost.cache_dir() / "auto" / f"{curve_key(target).replace('/', '_')}-{digest}.json"


def read_memory(path: Path | None) -> dict | None:
    """What a file of memory_file holds, as CostAwareBudget.remember returns it; None if there is none or it is not
    such a file (a damaged or older file is ignored: the run starts from the priors)."""
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        if data.get("version") != MEMORY_VERSION:
            return None
        learned = dict(data["learned"])
        for k in ("one_guess", "tree"):
            learned[k] = Tier(**learned[k])
        lists = ("ratio", "seen", "last", "rank_expected", "rank_accepted")
        numbers = ([learned[k] for k in CostAwareBudget.CARRIED] + [x for k in lists for x in learned[k]]
                   + [x for k in ("one_guess", "tree") for x in asdict(learned[k]).values()])
        counts = [x for k in ("one_guess", "tree") for x in (learned[k].chain_accepted, learned[k].edges_accepted,
                                                             learned[k].edges_passes)]
        ok = (set(learned) == set(CostAwareBudget.CARRIED) | {"one_guess", "tree", *lists}
              and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in numbers)
              and len(learned["rank_expected"]) == len(learned["rank_accepted"]) == RANKS
              and all(x >= 0 for x in counts + learned["rank_expected"] + learned["rank_accepted"])
              and all(learned[k].chain_expected > 0 for k in ("one_guess", "tree")))
        return learned if ok else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
