"""Draft trees grown best-first by path probability under a budget of states to evaluate.

A node is a state; an edge is a drafted decision (one position and token in exact mode, a set of positions with
tokens in SPOT-Sets). Node 0 is s1, the state after the free first decision. The budget counts every node the
verification pass evaluates, s1 included, so it is exactly the pass's batch size; a known state (below) is not
evaluated again and costs none.

Equal states are one node. A node is identified by (S, t): S the set of (position, token) commits drafted on the
way from s1, t its depth (the step whose noise its decision uses). Two drafted orders of the same commits, a then b
and b then a, reach the same (S, t); the target's decision there is the same whichever way the walk arrived, so
the second path becomes a second edge into the first path's node instead of a node of its own. The tree holds
every state once (and the verification batch every state it evaluates), and the acceptance walk (which moves along
any edge equal to the target's decision) stays exact. Merged edges cost no budget. The node keeps the path it was
first reached by (its state row and the proposer's path terms come from it); its path_prob becomes its reach, the
chance that the walk gets there: the sum over its incoming edges of parent reach times edge probability. A merge
raises the reach of the node and of all below it, and their waiting candidates are queued again at the higher
priority. With an order drafter, repeated states were ~40% of the nodes of a strict 32-node tree on math-bd
(T = 0).

Across a window boundary. With `view.ahead` (the next window's stale distributions), a node that completes the
window may have children in the next window: the proposer drafts them from the ahead view exactly as it drafts a
window's first decisions (its node seen with only the path's commits in that window), their offsets counted from
view.lo (w + o for offset o of the next window). A node that drafted an end-of-text token gets none (the text ends
there), and no edge completes the next window (its decision would need the window after). The verifier evaluates
such a state in the same pass, over both windows (samplers/verify.py).

Certain edges. With `view.known` (logits an earlier pass of the window computed, keyed by the tokens that condition
them), a node whose window tokens were already evaluated gets one child, the target's own decision there (the rule
on the stored logits, with the node's step), with probability 1 and no alternatives: `decided` marks such a node.
With `view.ahead.known`, a node that completes the window the same way as an evaluated one gets the next window's
first decision the same way.

Known states cost no budget. Where the stored row is the row a new pass would compute (`view.known.reuse`: the
probe proved batched passes bit-identical to one-row passes, and windows are blockwise-exact), a node whose window
tokens a pass already evaluated is not evaluated again: the verifier decides it from the stored row (`stored`) and
leaves it out of its batch, so the tree grows on until the budget's count of states to evaluate is full. The
decision is the same numbers, so the walk is unchanged; a pass of N states verifies a larger tree. Measured on
math-bd (the 40 bench problems, SPOT, T = 0): passes 638 -> 612 at budget 4, 463 -> 450 at 8, 370 -> 365 at 16,
317 -> 313 at 32 (~6% of a 32-node tree's nodes are known states).

Likely edges. A node that no pass evaluated but that lies one or two commits past an evaluated state (every commit
of that state is on the node's path, one or two of the path's are not in it) gets the target's decision at that
state as a likely edge: it is mixed with the proposer's own candidates, P = w [the edge] + (1 - w) P_proposer, with
w = NEAR_WEIGHT. Those logits miss one or two of the node's commits, where the root's, which the proposer reads, may
miss all of the path's. Measured on math-bd (40 validation problems drawn like the bench's with another seed,
budget 32, release 13's drafters): such edges were the target's decision at 73% of the walk's nodes that had one
(one commit missing), and passes fell 318 -> 306 at T = 0 and 324 -> 313 at T = 1 (w = 0.7 and up to two commits
missing; w = 0.85: 308, up to one: 312, up to four: 310); at budget 4 631 -> 625 and 642 -> 635; SPOT-Sets at
budget 32 175 -> 174, at budget 4 199 -> 195 (T = 0). Not in one-guess trees (budget 2: 159 passes either way on six
problems, for 0.1 ms of lookups a pass).

One guess. A tree of s1 and one node needs only the likeliest child of s1, and that needs the root's distributions
only at s1's masked positions, which the root's decision already computed (decision.decide keeps them). A proposer
that can rank s1's children from those rows alone drafts it with `first_child` (the calibrated template, SPOT's
partner for such trees: the same edge with the same probability, tested), skipping the per-pass context over the
whole window; on math-bd (AVX2 CPU, thread time) a one-guess tree took 0.54 -> 0.33 ms at T = 0 and 0.88 -> 0.46 ms
at T = 1, and the pass no longer computes the root's log-probabilities over the window. Nor is it grown through the
heap of TreeGrowth below (one_guess_tree: the same nodes and policy calls, but where s1 is a known state, when
growth would go on to a second evaluated state; AVX-512 CPU, inside decodes, 0.15-0.21 -> 0.10-0.14 ms at T = 0).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np
import torch

from .features import RootView


@dataclass
class DraftNode:
    id: int
    parent: int
    depth: int
    offsets: tuple[int, ...]  # window offsets committed on the edge parent -> node
    tokens: tuple[int, ...]
    prob: float
    path_prob: float  # reach: the chance the walk gets here (product along the path, summed over merged edges)
    path: tuple[int, ...] = ()  # all drafted offsets on the path from s1 (in order)
    children: dict = field(default_factory=dict)  # (offsets, tokens) -> child id
    memo: object = None  # proposer-specific per-node cache (e.g. summed path terms)
    memo_tokens: tuple | None = None  # drafted tokens on the path, aligned with `path`
    state: frozenset = frozenset()  # the drafted commits {(offset, token)} from s1 to this node
    merged_from: list = field(default_factory=list)  # other parents whose drafted edge reaches this same state
    added_prob: float = 1.0  # path_prob when the node was added (the best-first order: never increases with id)
    proposals: list = field(default_factory=list)  # the proposer's candidates here [(offsets, tokens, p)]
    edge_prob: dict = field(default_factory=dict)  # (offsets, tokens) -> drafter probability, for each of children
    decided: bool = False  # its one child is the target's own decision, known from logits a pass already computed
    stored: object = None  # this window's logits at its state, kept from an earlier pass (view.known): the
    # verification pass reuses them and leaves the node out of its batch (a known state costs no budget)
    near: tuple | None = None  # (offsets, tokens) of its likely edge: the decision at an evaluated state just above


NEAR_WEIGHT = 0.7  # a likely edge's share of a node's candidates (module docstring)
ONE_GUESS = 2  # a tree of s1 and one drafted node: a proposer may draft it more cheaply (Proposer.for_budget)


class Proposer:
    """A candidate generator: proposes the children of a node. Subclasses: training-free, calibrated, SPOT."""

    branch_positions = 4  # children considered per node (positions or sets)

    def prepare(self, view: RootView, max_depth: int) -> object:
        """Per-pass work (e.g. one drafter forward), done once before the pass's first `children` (not at all for a
        one-guess tree that `first_child` drafts). Returns a context passed to `children` (default: None)."""
        return None

    def children(self, ctx, view: RootView, node: DraftNode, remaining: np.ndarray) -> list[tuple]:
        """[(offsets tuple, tokens tuple, prob)] for the decision at `node` (depth node.depth + 1).

        remaining: bool [w], window offsets still masked at `node`."""
        raise NotImplementedError(f"{type(self).__name__} must define children(ctx, view, node, remaining) "
                                  f"(spotviz.drafter.tree.Proposer)")

    def for_budget(self, budget: int) -> "Proposer":
        """The proposer that drafts a tree of at most `budget` evaluated states (a proposer may hand a small tree to a
        cheaper one: proposers/spot.py)."""
        return self

    def first_child(self, view: RootView, remaining: np.ndarray) -> list[tuple] | None:
        """A one-guess tree's child of s1 without the per-pass context: [the likeliest of `children` at s1] (or []
        for none), computed from the root's rows at the masked offsets alone; None where the proposer has no such
        shortcut (then `prepare` and `children` draft it)."""
        return None


class BudgetPolicy:
    """How many states a pass's tree may have the target evaluate, and which best-first prefix it keeps: the decoder
    asks draft_now() before a pass and reports the pass with observe(); the tree builder calls begin(), then
    add(path_prob, free) for every node after s1 while stop(next_p) is False, then choose(). `budget` is this pass's
    cap on the states evaluated (known states, free, are not counted). The
    defaults here draft every pass and keep every node grown: FixedBudget below; samplers/auto_budget.CostAwareBudget
    is the cost-aware policy (`--budget auto`)."""

    budget: int

    def draft_now(self, stale_conf) -> bool:
        """Whether this pass drafts, given the stale confidences at the positions still masked in s1."""
        return True

    def begin(self, n_masked: int, s1_evaluated: bool = True) -> None:
        """A new tree: only s1 so far (n_masked positions left to decide in the window; s1_evaluated False: s1 is a
        known state, outside the batch)."""

    def add(self, path_prob: float, free: bool = False) -> None:
        """The next best-first node was added with this path probability (free: a known state, outside the batch:
        it costs no budget)."""

    def stop(self, next_p: float) -> bool:
        """Whether to stop growing, the best candidate left having path probability next_p."""
        return False

    def choose(self, n_nodes: int) -> int:
        """How many of the n_nodes best-first nodes to keep."""
        return n_nodes

    def observe(self, outcome) -> None:
        """After a pass: what it cost and what it accepted (samplers/auto_budget.PassOutcome)."""


class FixedBudget(BudgetPolicy):
    """A fixed count of evaluated states: every pass drafts, and the tree keeps every node grown."""

    def __init__(self, budget: int):
        self.budget = int(budget)


def build_tree(view: RootView, proposer: Proposer, budget, min_path_prob: float = 0.0) -> list[DraftNode]:
    """Best-first tree (by path probability) rooted at s1 whose verification evaluates at most `budget` states (its
    known states, decided from stored logits, come on top).

    budget: a count of states, or a BudgetPolicy (FixedBudget, or samplers/auto_budget.CostAwareBudget, which stops
    growing when no larger tree can pay for its forward and keeps the best-first prefix with the most expected
    commits per second). min_path_prob > 0 stops growing once the best candidate's path probability (its chance
    of being accepted) falls below it: the budget becomes a cap, and passes whose drafts are unlikely verify fewer
    states. Nodes are in best-first order (non-increasing path probability), so every prefix of the list is a
    graph of the same kind (parents first). A candidate that reaches a state already in the tree at the same depth
    becomes an edge into that node (module docstring)."""
    policy = FixedBudget(budget) if isinstance(budget, int) else budget
    proposer = proposer.for_budget(policy.budget)
    masked = view.masked.cpu().numpy()
    if policy.budget == ONE_GUESS and masked.any():
        return one_guess_tree(view, proposer, policy, masked, min_path_prob)
    return grow_tree(view, proposer, policy, min_path_prob)


def grow_tree(view: RootView, proposer: Proposer, policy, min_path_prob: float = 0.0) -> list[DraftNode]:
    """build_tree's best-first growth (its docstring), for a budget policy and the proposer that drafts at its
    budget."""
    return TreeGrowth(view, proposer, policy).grow(min_path_prob)


class TreeGrowth:
    """One tree grown best-first (grow_tree): the nodes so far, the index of their states, and the heap of the
    candidates waiting to become nodes. `grow` pops the likeliest candidate until the policy's budget is full;
    `expand` asks where a new node's children come from, in this order: a certain edge (known_child), a likely edge
    mixed with the proposer's (near_children), the proposer's own (drafted_children), and past a completed window
    the next window's (ahead_children)."""

    def __init__(self, view: RootView, proposer: Proposer, policy):
        self.view, self.proposer, self.policy = view, proposer, policy
        self.root = DraftNode(0, -1, 0, (), (), 1.0, 1.0)
        self.nodes = [self.root]
        self.index = {(self.root.state, 0): 0}  # (drafted commits, depth) -> node id
        self.masked = view.masked.cpu().numpy()
        self.n_masked = int(self.masked.sum())
        self.heap: list = []
        self.tie = 0  # (heap entries of equal priority keep the order they were pushed in)
        ahead = view.ahead
        self.w = view.width
        self.masked_ahead = ahead.masked.cpu().numpy() if ahead is not None else None
        self.s1_window = view.state[view.lo:view.hi].cpu().numpy().astype(np.int64)
        self.max_depth = self.n_masked + (int(self.masked_ahead.sum()) - 1 if ahead is not None else 0)
        self.eos = set(view.eos_ids)
        self.near_ok = view.known is not None and policy.budget > ONE_GUESS  # (one guess: the likeliest will do)
        self.ctx = self.ctx_ahead = None  # the proposer's per-pass contexts (grow prepares them)

    def grow(self, min_path_prob: float = 0.0) -> list[DraftNode]:
        """The tree's nodes in best-first order (call it once: a TreeGrowth grows one tree)."""
        view, policy, nodes = self.view, self.policy, self.nodes
        if policy.budget <= 1 or (self.n_masked == 0 and view.ahead is None):
            return nodes
        # the proposer's per-pass context, prepared up front as its contract says (none where this window is complete)
        # (contexts grow their depths lazily: a tree with known states may go deeper than budget - 1)
        self.ctx = self.proposer.prepare(view, max_depth=self.max_depth) \
            if self.n_masked else None
        self.expand(self.root)
        self.batch = int(self.root.stored is None)
        policy.begin(self.n_masked, s1_evaluated=bool(self.batch))
        heap = self.heap
        while heap and self.batch < policy.budget:
            neg, _, pid, offsets, tokens, _ = heap[0]
            if (offsets, tokens) in nodes[pid].children:  # (a stale entry of an edge already taken: no candidate)
                heapq.heappop(heap)
                continue
            if -neg < min_path_prob:  # the heap is ordered: every remaining candidate is less likely still
                break
            if policy.stop(-neg):
                break
            _, _, pid, offsets, tokens, p = heapq.heappop(heap)
            self.add(nodes[pid], offsets, tokens, p)
        return prefix(nodes, policy.choose(len(nodes)))

    def add(self, parent: DraftNode, offsets: tuple, tokens: tuple, p: float) -> None:
        """The candidate (offsets, tokens) of `parent` with probability p becomes an edge: into a new node, or into
        the node of the same state at the same depth (another order of the same commits: no new state). `grow`
        drops the stale heap entries of edges already taken before it gets here."""
        key = (offsets, tokens)
        nodes = self.nodes
        state = parent.state | frozenset(zip(offsets, tokens))
        same = self.index.get((state, parent.depth + 1))
        if same is not None:
            parent.children[key], parent.edge_prob[key] = same, p
            nodes[same].merged_from.append(parent.id)
            self.raise_reach(nodes[same], parent.path_prob * p)
            return
        node = DraftNode(len(nodes), parent.id, parent.depth + 1, offsets, tokens, p, parent.path_prob * p,
                         parent.path + offsets, state=state, added_prob=parent.path_prob * p)
        parent.children[key], parent.edge_prob[key] = node.id, p
        self.index[(state, node.depth)] = node.id
        nodes.append(node)
        # (a full tree's last node gets no drafted children; a known state, which costs no budget, still gets its
        # certain one)
        self.expand(node, room=self.batch + 1 < self.policy.budget)
        free = node.stored is not None
        self.batch += not free
        self.policy.add(node.path_prob, free)

    def expand(self, node: DraftNode, room: bool = True) -> None:
        """Find `node`'s candidate children and queue them: its certain edge if a pass evaluated its state (the node
        then costs no budget: `stored`), else, if `room`, the likely and drafted ones."""
        if node.depth >= self.max_depth:
            return
        view, w = self.view, self.w
        remaining = self.masked.copy()
        here = [o for o in node.path if o < w]
        if here:
            remaining[here] = False
        if remaining.any():
            if not room and (view.known is None or not view.known.reuse):  # (no room, and no free state possible)
                return
            win = self.window_tokens(node) if view.known is not None else None  # (what both stores are looked up by)
            props = self.known_child(node, view, torch.from_numpy(remaining), win=win)
            if node.stored is None and not room:  # (a node the batch holds, and the batch is full)
                return
            props = props or self.near_children(node, remaining, win) or self.drafted_children(node, remaining)
        elif room and view.ahead is not None and not self.eos & set(_path_tokens(self.nodes, node)):
            props = self.ahead_children(node)
        else:
            return
        node.proposals = [(tuple(o), tuple(t), p) for o, t, p in props if p > 0]
        self.push(node)

    def drafted_children(self, node: DraftNode, remaining: np.ndarray):
        """The proposer's candidates at `node`."""
        return self.proposer.children(self.ctx, self.view, node, remaining)

    def known_child(self, node: DraftNode, v: RootView, masked: torch.Tensor, shift: int = 0, win=None):
        """[the target's own decision at `node` as a certain edge] if a pass already evaluated the state that
        conditions it (v.known: this window's tokens at the node, `win` if given), else None; offsets moved by
        `shift`. In this window, where the stored row may stand in for the node's (v.known.reuse), the node becomes
        a known state: `stored`, outside the batch."""
        if v.known is None:
            return None
        key = (self.window_tokens(node) if win is None else win).tobytes()
        d = v.known.decision(key, masked, self.view.step + node.depth)
        if d is None:
            return None
        node.decided = True
        if v is self.view and v.known.reuse:
            node.stored = v.known.logits_at(key)
        return [(tuple(o + shift for o in d.offsets), tuple(d.tokens), 1.0)]

    def near_children(self, node: DraftNode, remaining: np.ndarray, win: np.ndarray | None):
        """The proposer's candidates with the target's decision at the nearest evaluated state above `node` (whose
        window tokens are `win`) mixed in as a likely edge (module docstring), None if no evaluated state is near."""
        if not self.near_ok:
            return None
        d = self.view.known.nearest(win, torch.from_numpy(remaining), self.view.step + node.depth)
        if d is None:
            return None
        node.near = (tuple(d.offsets), tuple(d.tokens))
        return mix_candidates((NEAR_WEIGHT, [(*node.near, 1.0)]),
                              (1 - NEAR_WEIGHT, self.drafted_children(node, remaining)))

    def window_tokens(self, node: DraftNode) -> np.ndarray:
        """The window's tokens at `node`: s1 with the path's commits in this window, masks included ([w] int64)."""
        win = self.s1_window.copy()
        for o, t in zip(node.path, _path_tokens(self.nodes, node)):
            if o < self.w:
                win[o] = t
        return win

    def ahead_children(self, node: DraftNode):
        """The node's children in the next window: the proposer's, on the ahead view, with offsets moved by w;
        none that completes that window."""
        ahead, w = self.view.ahead, self.w
        remaining = self.masked_ahead.copy()
        there = tuple(o - w for o in node.path if o >= w)
        if there:
            remaining[list(there)] = False
        left = int(remaining.sum())
        if left <= 1:
            return []
        known = self.known_child(node, ahead, ahead.masked, shift=w) if not there else None
        if known:  # (the next window's first decision after a completed window a pass evaluated)
            return [c for c in known if len(c[0]) < left]
        if self.ctx_ahead is None:
            self.ctx_ahead = self.proposer.prepare(ahead, max_depth=self.max_depth)
        seen = DraftNode(node.id, node.parent, node.depth, (), (), node.prob, node.path_prob, there)
        return [(tuple(o + w for o in offs), toks, p) for offs, toks, p in
                self.proposer.children(self.ctx_ahead, ahead, seen, remaining) if len(offs) < left]

    def push(self, node: DraftNode) -> None:
        """Queue `node`'s candidates not yet taken, at priority reach x probability."""
        for offsets, tokens, p in node.proposals:
            if (offsets, tokens) not in node.children:
                self.tie += 1
                heapq.heappush(self.heap, (-node.path_prob * p, self.tie, node.id, offsets, tokens, p))

    def raise_reach(self, node: DraftNode, delta: float) -> None:
        """A new edge into `node` adds `delta` to the chance that the walk reaches it, and through it to its
        descendants' (level by level: every edge goes one step deeper, so each node is updated once); their
        waiting candidates are queued again at the higher priority (the stale copies are skipped when popped)."""
        level = {node.id: delta}
        while level:
            deeper: dict[int, float] = {}
            for i, dl in level.items():
                n = self.nodes[i]
                n.path_prob += dl
                self.push(n)
                for key, c in n.children.items():
                    deeper[c] = deeper.get(c, 0.0) + dl * n.edge_prob[key]
            level = deeper


def one_guess_tree(view: RootView, proposer: Proposer, policy, masked: np.ndarray,
                   min_path_prob: float = 0.0) -> list[DraftNode]:
    """A tree of s1 and its likeliest child (budget ONE_GUESS, s1 with masked positions): the nodes grow_tree makes
    there, without its machinery (tests/test_spot.py checks the two agree). s1's candidates: the target's decision as
    a certain edge where a pass of the window already evaluated s1, else the proposer's first_child, else (no
    shortcut) its children from the per-pass context; the first of the likeliest is kept unless it is below
    min_path_prob or the policy stops, and the policy is told what grow_tree tells it. s1's proposals are that one
    guess alone (what a walk that stops at s1 is compared with: verify.walk_end). Where s1 is a known state (outside
    the batch), grow_tree would go on to a second evaluated state; this tree stops at its certain guess, a pass of
    one state."""
    root = DraftNode(0, -1, 0, (), (), 1.0, 1.0)
    props = None
    if view.known is not None:
        key = view.state[view.lo:view.hi].cpu().numpy().astype(np.int64).tobytes()
        d = view.known.decision(key, torch.from_numpy(masked), view.step)
        if d is not None:
            props, root.decided = [(tuple(d.offsets), tuple(d.tokens), 1.0)], True
            root.stored = view.known.logits_at(key) if view.known.reuse else None
    if props is None:
        props = proposer.first_child(view, masked.copy())
    if props is None:
        props = proposer.children(proposer.prepare(view, max_depth=1), view, root, masked.copy())
    props = [(tuple(o), tuple(t), p) for o, t, p in props if p > 0]
    policy.begin(int(masked.sum()), s1_evaluated=root.stored is None)
    nodes = [root]
    if props:
        offsets, tokens, p = max(props, key=lambda c: c[2])  # (max keeps the first of equal maxima)
        # s1's guesses are its one guess, whichever way it was found (first_child computes no others), so the reason a
        # walk stops at budget 2 reads alike for every proposer (verify.walk_end)
        root.proposals = [(offsets, tokens, p)]
        if p >= min_path_prob and not policy.stop(p):
            state = frozenset(zip(offsets, tokens))
            nodes.append(DraftNode(1, 0, 1, offsets, tokens, p, p, offsets, state=state, added_prob=p))
            root.children[(offsets, tokens)], root.edge_prob[(offsets, tokens)] = 1, p
            policy.add(p)
    return prefix(nodes, policy.choose(len(nodes)))


def mix_candidates(*weighted: tuple[float, list]) -> list[tuple]:
    """The mixture sum_k w_k P_k of candidate lists [(offsets, tokens, p)] given as (w_k, list_k) pairs: one entry
    per distinct (offsets, tokens), likeliest first (ties keep the order of first appearance)."""
    mixed: dict = {}
    for w, cands in weighted:
        for offs, toks, p in cands:
            mixed[(offs, toks)] = mixed.get((offs, toks), 0.0) + w * p
    return sorted(((o, t, p) for (o, t), p in mixed.items()), key=lambda c: -c[2])


def prefix(nodes: list[DraftNode], k: int) -> list[DraftNode]:
    """The first k nodes of a best-first tree (a tree: parents come before children), edges beyond cut."""
    if k >= len(nodes):
        return nodes
    for n in nodes[:k]:
        n.children = {key: c for key, c in n.children.items() if c < k}
        n.merged_from = [m for m in n.merged_from if m < k]
    return nodes[:k]


def node_states(view: RootView, nodes: list[DraftNode]) -> torch.Tensor:
    """[len(nodes), L] token rows: s1 with each node's drafted path applied (in numpy: a tree's few small
    writes cost less there than torch's per-call dispatch)."""
    rows = np.repeat(view.state.cpu().numpy()[None], len(nodes), axis=0)
    for n in nodes[1:]:
        rows[n.id, [view.lo + o for o in n.path]] = _path_tokens(nodes, n)
    return torch.from_numpy(rows)


def _path_tokens(nodes: list[DraftNode], n: DraftNode) -> tuple[int, ...]:
    """The drafted tokens on the path from s1 to n, in the order of n.path."""
    if n.memo_tokens is None:
        n.memo_tokens = (_path_tokens(nodes, nodes[n.parent]) if n.parent > 0 else ()) + n.tokens
    return n.memo_tokens
