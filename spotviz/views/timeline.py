"""The explainer's timeline: a trace as lines of JSON, one per target pass, that the app's explainer component
(spotviz.ui.explainer) draws with one pass scrubber driving every view.

A run is a header line, then one line per pass, then a closing line:

    {"t": "run",  "r": role, "meta": {...}}                       prompt, slots, settings (no tokens yet)
    {"t": "pass", "r": role, "k": k, "c": [...], "tree": {...}}   what pass k committed and the tree it verified
    {"t": "end",  "r": role, "why": [...], "final": [...]}        the finished run: final token per slot and,
                                                                  per pass, which masked slots the drafter
                                                                  already had right ("stale = right")
    {"t": "sum",  ...}                                            the comparison of the two runs (headline)

`role` is "main" (the chosen drafter) or "base" (the standard decoder on the same prompt and seed). The lines
are appended while a run streams (the app sends only what is new), so a pass line depends on that pass alone
and on the run's header: the live stream and a replayed trace produce the same lines.

The maths made visible. Pass k verifies a tree of drafted states in one batched forward; the acceptance walk
follows the drafted child that equals the target's own decision at each node, and stops at the first node whose
decision no child drafted: that decision (the "bonus") is committed too, so a pass commits (accepted depth + 1)
tokens where the standard decoder commits 1. Drafts come from the previous pass's predictions ("stale"
predictions): wherever the stale token at a still-masked slot is already the final token, a draft can be right,
which is the observation SPOT builds on. Views are pure functions of the trace; all token text travels as
plain strings and is inserted with textContent in the browser (never as HTML).
"""
from __future__ import annotations

import json

from .common import visible_token
from .speedup import identical_output, same_run

LABEL_CHARS = 12  # token text in a tree label (whitespace made visible)


def _dump(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def run_header(meta, role: str, token_text: dict[str, str], title: str = "") -> dict:
    """The header of a run: the prompt, its slots (positions) and the settings."""
    prompt_ids = list(meta.prompt_tokens)
    return {"t": "run", "r": role, "meta": {
        "title": title, "prompt": meta.prompt, "start": len(prompt_ids), "gen": meta.gen_length,
        "drafter": meta.drafter, "budget": meta.budget, "mode": meta.mode, "tau": meta.threshold,
        "temperature": meta.temperature, "seed": meta.seed, "model": meta.model,
        "prune": meta.min_path_prob, "truncated": bool(meta.prompt_truncated),
        "auto": bool(getattr(meta, "budget_auto", False)),
        "mask": token_text.get(str(meta.mask_id), "[MASK]")}}


def _label(token_text: dict[str, str], tok: int) -> str:
    return token_text.get(str(tok), f"#{tok}")


def _text(token_text, positions, tokens, limit: int = LABEL_CHARS) -> str:
    parts = [visible_token(_label(token_text, t), limit) for t in tokens]
    if len(parts) > 3:
        parts = parts[:3] + [f"+{len(parts) - 3}"]
    return " ".join(parts) if parts else "∅"


def _detail(token_text, positions, tokens) -> str:
    return ", ".join(f"slot {p} = {_label(token_text, t)!r}" for p, t in zip(positions, tokens)) or "nothing"


def tree_frame(rec, token_text: dict[str, str]) -> dict | None:
    """The draft tree of one pass, laid out on a grid (column = depth, row = leaf order) fitted to this pass.

    Nodes: [id, parent, column, row, label, hover, flag, slots] with flag 1 = on the accepted path, 0 = rejected;
    slots = every slot drafted on the path from the root to the node (what hovering highlights on the canvas).
    `bonus`: the target's own decision where the walk stopped (drawn one column right of that node);
    `expect`: the slots of the drafter's most likely path (its expected next commits)."""
    if not rec.tree:
        return None
    from .tree import layout_tree

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
                     f" · path probability {n.path_prob:.3f}")
        if n.target_positions:
            hover += f" · target's own decision here: {_detail(token_text, n.target_positions, n.target_tokens)}"
        hover += " · accepted" if n.id in on_path else " · rejected"
        nodes.append([n.id, n.parent if not root else -1, x, y, label, hover, int(n.id in on_path),
                      slots[n.id]])
    bonus = [c for c in rec.commits if not c.drafted]
    stop = path[-1]
    out = {"nodes": nodes, "rows": leaves, "cols": max(n.depth for n in rec.tree) + 1, "stop": stop,
           "bonus": None, "depth": len(path) - 1, "size": len(rec.tree)}
    if bonus:
        out["bonus"] = [_text(token_text, [c.position for c in bonus], [c.token for c in bonus]),
                        "the target's own decision where the walk stopped, committed without being drafted: "
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


def pass_line(rec, role: str, token_text: dict[str, str], committed: int) -> dict:
    """One pass: its commits [slot, text, decision step, drafted (1) or the target's own decision (0),
    confidence], the tree it verified, the states in its batch (the budget chosen for the pass) and the
    slots committed so far."""
    return {"t": "pass", "r": role, "k": rec.index, "kind": rec.kind, "states": rec.states,
            "budget": int(getattr(rec, "budget", 0) or 0),
            "wall": round(float(rec.wall_s), 5), "n": committed,
            "c": [[c.position, _label(token_text, c.token), c.step, int(bool(c.drafted)), round(c.confidence, 3)]
                  for c in rec.commits],
            "tree": tree_frame(rec, token_text)}


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
    the counters and the stale-right slots per pass."""
    m = trace.meta
    start = len(m.prompt_tokens)
    final = {c.position: trace.label(c.token) for p in trace.passes for c in p.commits}
    c = trace.counters
    return {"t": "end", "r": role, "final": [final.get(start + i) for i in range(m.gen_length)],
            "end": len(trace.tokens), "why": stale_right(trace) if any(p.tree for p in trace.passes) else [],
            "counters": {"passes": c.target_passes, "commits": c.commits, "tokens": c.generated_tokens,
                         "drafted": c.drafted_nodes, "accepted": c.accepted_drafts,
                         "mal": round(c.mean_accepted_length, 3),
                         "depth": [round(a, 3) for a in c.acceptance_per_depth], "wall": round(c.wall_s, 4),
                         "tps": round(c.tokens_per_s, 2)}}


def summary(main, base=None) -> dict:
    """The headline: target passes saved against the standard decoder, the wall-clock ratio next to it, and
    whether the outputs are identical."""
    out = {"t": "sum", "passes": main.counters.target_passes, "drafter": main.meta.drafter,
           "device": main.meta.device, "wall": round(main.counters.wall_s, 4),
           "guaranteed": bool(getattr(main.meta, "identity_guaranteed", True))}
    if base is not None and same_run(main, base) and main.meta.drafter != "none":
        b = base.counters
        out.update({"base_passes": b.target_passes, "saved": b.target_passes - main.counters.target_passes,
                    "ratio": round(b.target_passes / max(main.counters.target_passes, 1), 3),
                    "base_wall": round(b.wall_s, 4),
                    "wall_ratio": round(b.wall_s / main.counters.wall_s, 3) if main.counters.wall_s > 0 else None,
                    "identical": identical_output(main, base)})
    return out


def trace_lines(trace, role: str, title: str = "") -> list[dict]:
    """Every line of one finished (or replayed) run."""
    lines = [run_header(trace.meta, role, trace.token_text, title)]
    committed = 0
    for rec in trace.passes:
        committed += len(rec.commits)
        lines.append(pass_line(rec, role, trace.token_text, committed))
    lines.append(end_line(trace, role))
    return lines


def status_line(text: str, kind: str = "info") -> dict:
    return {"t": "status", "text": text, "kind": kind}


def timeline(main, base=None, *, titles: tuple[str, str] = ("", ""), status: tuple[str, str] | None = None,
             session: str = "", play: bool = False, source: str = "replay") -> str:
    """The explainer's value for finished traces: a session line, both runs, the headline and a status."""
    lines: list[dict] = [session_line(session, source, play)]
    lines += trace_lines(main, "main", titles[0])
    if base is not None:
        lines += trace_lines(base, "base", titles[1])
    lines.append(summary(main, base))
    if status:
        lines.append(status_line(*status))
    return encode(lines)


def session_line(session: str, source: str, play: bool = False) -> dict:
    """Starts a new value: `source` is "example", "replay" or "live"; `play`: start playing at pass 1."""
    return {"t": "session", "id": session, "source": source, "play": bool(play)}


def encode(lines: list[dict]) -> str:
    """Lines as the component's value: one JSON object per line, each ending with a newline."""
    return "".join(_dump(x) + "\n" for x in lines)
