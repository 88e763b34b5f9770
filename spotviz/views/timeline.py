"""The explainer's timeline: a trace as lines of JSON, one per target pass, that the app's explainer component
(spotviz.ui.explainer) draws with one pass scrubber driving every view.

A run is a header line, then one line per pass, then a closing line:

    {"t": "run",  "r": role, "meta": {...}}                       prompt, slots, settings (no tokens yet)
    {"t": "pass", "r": role, "k": k, "c": [...], "tree": {...}}   what pass k committed and the tree it verified
    {"t": "end",  "r": role, "why": [...], "final": [...]}        the finished run: final token per slot and,
                                                                  per pass, which masked slots the drafter
                                                                  already had right ("stale = right")
    {"t": "sum",  ...}                                            the comparison with the standard decoder
                                                                  (views/headline.py)

and a session's lines open with {"t": "session", "id", "source", "play", "runs"} (a new session: a Run press,
an example, a replay, a page); {"t": "status", "text", "kind"} lines carry the app's status (the last one,
"final": true, ends a live session).

`role` is "main" (the chosen drafter), "base" (the standard decoder on the same prompt and seed) or, in a race,
the other drafters' names. A session line may list the runs to come ("runs": [[role, title], ...]) so the
page lays out every lane before the first pass. The lines
are appended while a run streams (the app sends only what is new), so a pass line depends on that pass alone
and on the run's header: the live stream and a replayed trace produce the same lines.

The maths made visible. Pass k verifies a tree of drafted states in one batched forward; the acceptance walk
follows the drafted child that equals the target's own decision at each node, and stops at the first node whose
decision no child drafted: that decision (the "bonus") is committed too, so a pass makes (accepted depth + 1)
decisions where the standard decoder makes 1 (a decision: one slot in exact mode, a set in threshold mode).
Drafts come from the previous pass's predictions ("stale" predictions): wherever the stale token at a still-masked slot is already the final token, a draft can be right,
which is the observation SPOT builds on. Views are pure functions of the trace; all token text travels as
plain strings and is inserted with textContent in the browser (never as HTML).
"""
from __future__ import annotations

import json

from ..trace import WALK_ENDS
from .common import visible_token
from .headline import DraftRoom, drafter_name, summary

LABEL_CHARS = 12  # token text in a tree label (whitespace made visible)


def _dump(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def run_header(meta, role: str, token_text: dict[str, str]) -> dict:
    """The header of a run: the prompt, its slots (positions) and the settings. A truncated prompt shows the
    tokens the model saw (its end), after an ellipsis."""
    prompt_ids = list(meta.prompt_tokens)
    prompt = meta.prompt
    if meta.prompt_truncated:
        prompt = "…" + "".join(token_text.get(str(t), "") for t in prompt_ids)
    return {"t": "run", "r": role, "meta": {
        "prompt": prompt, "start": len(prompt_ids), "gen": meta.gen_length,
        "drafter": meta.drafter, "budget": meta.budget, "mode": meta.mode, "tau": meta.threshold,
        "temperature": meta.temperature, "seed": meta.seed, "model": meta.model,
        "prune": meta.min_path_prob, "truncated": bool(meta.prompt_truncated),
        "auto": bool(meta.budget_auto), "coupled": bool(meta.coupled_noise),
        "mask": token_text.get(str(meta.mask_id), "[MASK]")}}


def layout_tree(nodes) -> tuple[dict[int, tuple[float, float]], int]:
    """(x, y) of every node id (x = depth, y = leaf order; parents centred on children) and the leaf count."""
    by_id = {n.id: n for n in nodes}
    children: dict[int, list] = {}
    roots = []
    for n in nodes:
        if n.parent in by_id and n.parent != n.id:
            children.setdefault(n.parent, []).append(n)
        else:
            roots.append(n)
    for ch in children.values():
        ch.sort(key=lambda c: (not c.accepted, -c.path_prob, c.id))
    pos: dict[int, tuple[float, float]] = {}
    leaf = 0
    seen = set()
    for r in roots:
        stack = [(r, False)]
        while stack:  # iterative post-order (trees can be deep)
            n, done = stack.pop()
            if done:
                ch = [c for c in children.get(n.id, []) if c.id in pos]
                y = (pos[ch[0].id][1] + pos[ch[-1].id][1]) / 2 if ch else float(leaf)
                if not ch:
                    leaf += 1
                pos[n.id] = (float(n.depth), y)
                continue
            if n.id in seen:
                continue
            seen.add(n.id)
            stack.append((n, True))
            for c in reversed(children.get(n.id, [])):
                stack.append((c, False))
    return pos, max(leaf, 1)


def _label(token_text: dict[str, str], tok: int) -> str:
    return token_text.get(str(tok), f"#{tok}")


def _text(token_text, positions, tokens, limit: int = LABEL_CHARS) -> str:
    """`slot:token` for each drafted decision (at most three, then +n): where and what."""
    parts = [f"{p}:{visible_token(_label(token_text, t), limit)}" for p, t in zip(positions, tokens)]
    if len(parts) > 3:
        parts = parts[:3] + [f"+{len(parts) - 3}"]
    return " ".join(parts) if parts else "∅"


def _detail(token_text, positions, tokens) -> str:
    # (whitespace drawn as the labels draw it: ↵ for a new line, · for a space)
    return ", ".join(f"slot {p} = “{visible_token(_label(token_text, t), 40)}”"
                     for p, t in zip(positions, tokens)) or "nothing"


def tree_frame(rec, token_text: dict[str, str]) -> dict | None:
    """The draft tree of one pass, laid out on a grid (column = depth, row = leaf order) fitted to this pass.

    Nodes: [id, parent, column, row, label, hover, flag, slots, merged, kind, reused] with flag 1 = on the accepted
    path, 0 = rejected; slots = every slot drafted on the path from the root to the node (what hovering highlights on
    the canvas); merged = the other parents whose drafted edge reaches the same state (drawn as dotted edges); kind = how
    the edge into the node was made: "" drafted, "k" certain, "n" likely, "f" an undrafted step (drawn as diamonds,
    triangles and hexagons); reused 1 = a known state, which the pass decided from an earlier pass's output instead
    of checking it (drawn hollow).
    `bonus`: the target's own decision where the walk stopped (drawn one column right of that node);
    `expect`: the slots of the drafter's most likely path (its expected next commits); `known`: how many edges are
    certain (the target's decision at a state an earlier pass already evaluated); `near`: how many are likely edges
    (its decision at an evaluated state one or two commits short of the parent); `found`: how many walk edges were
    not drafted (the target's decision led to a state the tree drafted on another branch); `reused`: how many nodes
    were known states, left out of the pass's batch (their logits came from an earlier pass)."""
    if not rec.tree:
        return None
    pos, leaves = layout_tree(rec.tree)
    by_id = {n.id: n for n in rec.tree}
    path = [i for i in rec.accepted_path if i in by_id] or [rec.tree[0].id]
    on_path = set(path)
    slots: dict[int, list[int]] = {}
    nodes = []
    for n in sorted(rec.tree, key=lambda n: (n.depth, n.id)):
        root = n.parent not in by_id
        slots[n.id] = ([] if root else slots.get(n.parent, [])) + list(n.positions)
        x, y = pos.get(n.id, (float(n.depth), 0.0))
        if root:
            label, hover = "start", "the state at the start of this pass (every commit so far)"
        else:
            label = _text(token_text, n.positions, n.tokens)
            hover = (f"drafted {_detail(token_text, n.positions, n.tokens)} · drafter probability {n.prob:.2f}"
                     f" · chance the walk gets here {n.path_prob:.3f}")
            if n.found:
                hover = (f"not drafted from here: the model decided {_detail(token_text, n.positions, n.tokens)},"
                         " which leads to a state the tree drafted in another order (dotted edges), so the walk went"
                         f" on there · chance the walk gets here {n.path_prob:.3f}")
            elif n.known:
                hover += (" · a certain edge: an earlier pass computed the model's output at the state before,"
                          " so its decision there is known, not guessed")
            elif n.near:
                hover += (" · a likely edge: the model's decision at a state an earlier pass computed, one or two"
                          " commits short of the state before (fresher than the drafter's view)")
        if n.target_positions:
            hover += f" · model's own decision here: {_detail(token_text, n.target_positions, n.target_tokens)}"
        if n.reused:
            hover += " · known state (hollow): its output came from an earlier pass, so it was not checked again"
        merged = [m for m in n.merged_from if m in by_id]
        if merged:
            hover += (f" · the same state is reached by {len(merged) + 1} drafted orders (dotted edges): "
                      + ("one state" if n.reused else "checked once"))
        hover += " · accepted" if n.id in on_path else " · rejected"
        kind = "" if root else "f" if n.found else "k" if n.known else "n" if n.near else ""
        nodes.append([n.id, n.parent if not root else -1, x, y, label, hover, int(n.id in on_path),
                      slots[n.id], merged, kind, int(n.reused)])
    bonus = [c for c in rec.commits if not c.drafted]
    stop = path[-1]
    out = {"nodes": nodes, "rows": leaves, "cols": max(n.depth for n in rec.tree) + 1, "stop": stop,
           "bonus": None, "depth": len(path) - 1, "size": len(rec.tree), "merged": sum(len(n[8]) for n in nodes),
           "known": sum(1 for n in rec.tree if n.known and n.parent in by_id),
           "near": sum(1 for n in rec.tree if n.near and n.parent in by_id),
           "found": sum(1 for n in rec.tree if n.found and n.parent in by_id),
           "reused": sum(1 for n in rec.tree if n.reused)}
    if bonus:
        out["bonus"] = [_text(token_text, [c.position for c in bonus], [c.token for c in bonus]),
                        "the model's own decision where the walk stopped, committed without being drafted: "
                        + _detail(token_text, [c.position for c in bonus], [c.token for c in bonus]),
                        [c.position for c in bonus]]
    # the drafter's expected next commits: follow the most probable child from the root
    children: dict[int, list] = {}
    for n in rec.tree:
        children.setdefault(n.parent, []).append(n)
    node, expect = by_id[path[0]], []
    while children.get(node.id):
        node = max(children[node.id], key=lambda c: (c.prob, -c.id))
        expect += list(node.positions)
    out["expect"] = expect
    return out


def undrafted_note(rec, meta, idle: bool = False) -> str:
    """Why pass `rec` of a drafted run verified no drafted state (empty when it did, or for a standard run); idle:
    it had nothing to draft (DraftRoom)."""
    if meta.drafter == "none" or len(rec.tree) > 1:
        return ""
    if rec.index == 0:
        return "The first pass is a plain pass: its decision is free, and there is nothing to draft from yet."
    if idle:
        return ("Nothing to draft: the pass's free first decision completed its window, so no masked slot was left "
                "to guess.")
    if meta.budget_auto:
        return ("Budget auto chose 1 state: on this hardware a tree was expected to cost more time than its "
                "guesses save (drafting pauses for a few passes after such a pass).")
    if meta.min_path_prob > 0:
        return f"Every draft fell below the prune threshold {meta.min_path_prob:g}: only the current state was checked."
    return "The drafter had nothing to propose here (no masked slot left to guess in this window)."


def pass_line(rec, role: str, token_text: dict[str, str], committed: int, meta=None, idle: bool = False) -> dict:
    """One pass: its commits [slot, text, decision step, drafted (1) or the target's own decision (0),
    confidence], the tree it verified, the states in its batch (the budget chosen for the pass), the slots
    committed so far, why its acceptance walk stopped (`stop`, in plain words: trace.WALK_ENDS) and, for a pass of
    a drafted run that drafted nothing, why (`note`; idle: it had nothing to draft, DraftRoom)."""
    out = {"t": "pass", "r": role, "k": rec.index, "kind": rec.kind, "states": rec.states,
           "budget": int(rec.budget or 0),
           "wall": round(float(rec.wall_s), 5), "n": committed,
           "c": [[c.position, _label(token_text, c.token), c.step, int(bool(c.drafted)), round(c.confidence, 3)]
                 for c in rec.commits],
           "tree": tree_frame(rec, token_text)}
    if rec.walk_end in WALK_ENDS:
        out["stop"] = WALK_ENDS[rec.walk_end]
    note = undrafted_note(rec, meta, idle) if meta is not None else ""
    if note:
        out["note"] = note
    return out


def stale_right(trace) -> list[list[int]]:
    """Per pass: the still-masked slots where the pass's tree drafted the final token. Drafts are read from the
    previous pass's predictions, so these are slots whose stale prediction was already right."""
    final = {c.position: c.token for p in trace.passes for c in p.commits}
    done: set[int] = set()
    out = []
    for p in trace.passes:
        right = set()
        for n in p.tree:
            for pos, tok in zip(n.positions, n.tokens):
                if pos not in done and final.get(pos) == tok:
                    right.add(pos)
        out.append(sorted(right))
        done.update(c.position for c in p.commits)
    return out


def end_line(trace, role: str) -> dict:
    """The finished run: every slot's final text (fixed token slots for the scrubber), where the text ends,
    the counters (with how many walks stopped for each reason, `ends`, and how many drafted states were known states
    decided from an earlier pass's output, `reused`, and how many states the model computed, `checked`) and the
    stale-right slots per pass."""
    m = trace.meta
    start = len(m.prompt_tokens)
    final = {c.position: trace.label(c.token) for p in trace.passes for c in p.commits}
    c = trace.counters
    return {"t": "end", "r": role, "final": [final.get(start + i) for i in range(m.gen_length)],
            "end": len(trace.tokens), "why": stale_right(trace) if any(p.tree for p in trace.passes) else [],
            "counters": {"passes": c.target_passes, "commits": c.commits, "tokens": c.generated_tokens,
                         "drafted": c.drafted_nodes, "accepted": c.accepted_drafts,
                         "reused": sum(n.reused for p in trace.passes for n in p.tree),
                         "checked": sum(p.states for p in trace.passes),
                         "mal": round(c.mean_accepted_length, 3),
                         "depth": [round(a, 3) for a in c.acceptance_per_depth], "wall": round(c.wall_s, 4),
                         "tps": round(c.tokens_per_s, 2), "ends": trace.walk_ends()}}


def trace_lines(trace, role: str) -> list[dict]:
    """Every line of one finished (or replayed) run."""
    lines = [run_header(trace.meta, role, trace.token_text)]
    committed, room = 0, DraftRoom(trace.meta)
    for rec in trace.passes:
        committed += len(rec.commits)
        lines.append(pass_line(rec, role, trace.token_text, committed, trace.meta, room.step(rec)))
    lines.append(end_line(trace, role))
    return lines


def status_line(text: str, kind: str = "info") -> dict:
    return {"t": "status", "text": text, "kind": kind}


def run_title(trace, role: str) -> str:
    return "Standard decoder" if role == "base" or trace.meta.drafter == "none" else drafter_name(trace.meta.drafter)


def timeline(main, base=None, *, race: list | None = None, status: tuple[str, str] | None = None,
             session: str = "", play: bool = False, source: str = "replay") -> str:
    """The explainer's value for finished traces: a session line, every run (`race`: the other drafters of a
    race, in lane order), the headline and a status."""
    race = [t for t in (race or []) if t is not main and t is not base]
    runs = [("main", main)] + [(t.meta.drafter, t) for t in race] + ([("base", base)] if base is not None else [])
    lines: list[dict] = [session_line(session, source, play, [[r, run_title(t, r)] for r, t in runs])]
    for role, t in runs:
        lines += trace_lines(t, role)
    lines.append(summary(main, base, race, recorded=source != "live"))
    if status:
        lines.append(status_line(*status))
    return encode(lines)


def session_line(session: str, source: str, play: bool = False, runs: list | None = None) -> dict:
    """Starts a new value: `source` is "example", "replay", "live" or "page" (the downloaded page); `play`: start
    playing at pass 1; `runs`: [[role, title], ...] of the runs to come, in lane order."""
    out = {"t": "session", "id": session, "source": source, "play": bool(play)}
    if runs:
        out["runs"] = runs
    return out


def encode(lines: list[dict]) -> str:
    """Lines as the component's value: one JSON object per line, each ending with a newline."""
    return "".join(_dump(x) + "\n" for x in lines)
