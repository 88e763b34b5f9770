"""Turns streamed decode events back into (partial) traces, canvases and figures for the UI."""
from __future__ import annotations

from ..trace import Commit, Counters, PassRecord, RunMeta, Trace, TreeNode
from ..views import Cell, canvas_html, trace_canvas
from ..views.common import esc


def record_from_dict(d: dict) -> PassRecord:
    d = dict(d)
    d["commits"] = [Commit(**c) for c in d.get("commits", [])]
    d["tree"] = [TreeNode(**n) for n in d.get("tree", [])]
    return PassRecord(**d)


def run_title(meta: RunMeta, role: str) -> str:
    """Escaped one-line heading of a canvas."""
    if meta.drafter == "none":
        what = f"standard decoder ({meta.mode}{', tau ' + format(meta.threshold, 'g') if meta.mode == 'threshold' else ''})"
    else:
        what = f"drafter {meta.drafter} · budget {meta.budget} · {meta.mode}"
        if meta.min_path_prob > 0:
            what += f" · pruned below path prob {meta.min_path_prob:g}"
    return (f"<b>{esc(role)}</b> — {esc(what)} · T={meta.temperature:g} · seed {meta.seed} · "
            f"{esc(meta.model)}" + (" · <i>prompt truncated to the context</i>" if meta.prompt_truncated else ""))


class LiveRun:
    """The state of one streamed run: meta, the passes so far, token texts and canvas cells."""

    def __init__(self, start: dict, role: str):
        self.meta = RunMeta(**start["meta"])
        self.role = role
        self.token_text: dict[str, str] = dict(start.get("token_text", {}))
        self.passes: list[PassRecord] = []
        self.cells: dict[int, Cell] = {}
        self.counters = Counters()
        self.trace: Trace | None = None

    @property
    def start(self) -> int:
        return len(self.meta.prompt_tokens)

    def add(self, ev: dict) -> None:
        rec = record_from_dict(ev["record"])
        self.passes.append(rec)
        self.token_text.update(ev.get("token_text", {}))
        self.counters = Counters(**ev["counters"])
        for c in rec.commits:
            self.cells[c.position] = Cell(c.position, self.token_text.get(str(c.token), f"#{c.token}"), rec.index,
                                          c.step, c.confidence, c.drafted)

    def finish(self, trace: Trace) -> None:
        self.trace = trace

    def partial_trace(self) -> Trace:
        """The run so far as a Trace (not validated; for the views while streaming)."""
        if self.trace is not None:
            return self.trace
        return Trace(meta=self.meta, passes=list(self.passes), tokens=[], text="", counters=self.counters,
                     token_text=dict(self.token_text))

    def canvas(self) -> str:
        if self.trace is not None:
            return trace_canvas(self.trace, title=run_title(self.meta, self.role))
        latest = self.passes[-1].index if self.passes else None
        return canvas_html(self.meta.prompt, self.start, self.meta.gen_length, self.cells,
                           title=run_title(self.meta, self.role) + " · <i>decoding…</i>", latest_pass=latest,
                           passes=len(self.passes))
