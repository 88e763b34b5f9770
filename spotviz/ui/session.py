"""One live session: turns the runner's plain events (spotviz.ui.runner) into timeline lines for the explainer.

The session's timeline only grows (Gradio then sends each update as an append of the new lines); `due()`
throttles the updates to what a browser can paint. `finish()` closes the timeline with the headline and the
final status, so what the page shows at the end comes from the finished traces alone.
"""
from __future__ import annotations

import time
import uuid

from ..trace import Commit, PassRecord, RunMeta, Trace, TreeNode
from ..views.headline import drafter_name, nothing_to_draft, small_trees_note, summary, times
from ..views.timeline import DraftRoom, end_line, pass_line, run_header, session_line, status_line
from .comparison import RunFigures
from .inputs import STRICTER_TAU

ROLES = {"main": "main", "baseline": "base"}  # runner run -> timeline role (a race drafter keeps its name)
UPDATE_EVERY_S = 0.15  # at most ~7 streamed updates a second (the browser paints them at most this often)


def record_from_dict(d: dict) -> PassRecord:
    d = dict(d)
    d["commits"] = [Commit(**c) for c in d.get("commits", [])]
    d["tree"] = [TreeNode(**n) for n in d.get("tree", [])]
    return PassRecord(**d)


class LiveSession:
    """The timeline of one Run press: both runs' lines, the traces when they finish, and the notes to show."""

    def __init__(self, plan=None, every_s: float = UPDATE_EVERY_S, longest: tuple[int, str] | None = None):
        """`plan` (inputs.RunPlan): the runs to come, so the page lays out every lane before the first pass;
        `longest`: the longest generation the app offers for this prompt and why (a run cut there is not told to
        ask for a longer one)."""
        self.longest = longest
        self.id = uuid.uuid4().hex[:10]
        self.text = ""
        self.every_s = every_s
        self.last_sent = 0.0
        self.token_text: dict[str, dict[str, str]] = {}
        self.committed: dict[str, int] = {}
        self.passes: dict[str, int] = {}
        self.traces: dict[str, Trace] = {}
        self.notes: list[tuple[str, str]] = []
        self.metas: dict[str, RunMeta] = {}
        self.rooms: dict[str, DraftRoom] = {}  # which passes had nothing to draft, per lane
        self.plan_note = plan.note if plan is not None else ""
        lanes = [[ROLES.get(run, run), "Standard decoder" if cfg.drafter == "none" else drafter_name(cfg.drafter)]
                 for run, cfg in plan.runs] if plan is not None else None
        self._add([session_line(self.id, "live", runs=lanes)])

    def _add(self, lines: list[dict]) -> None:
        from ..views.timeline import encode

        self.text += encode(lines)

    def event(self, ev: dict) -> None:
        """Take one runner event (start / pass / done / error)."""
        run = ev.get("run", "main")
        kind, role = ev["type"], ROLES.get(run, run)
        if kind == "start":
            self.token_text[role] = dict(ev.get("token_text", {}))
            self.committed[role] = 0
            self.passes[role] = 0
            self.metas[role] = RunMeta(**ev["meta"])
            self.rooms[role] = DraftRoom(self.metas[role])
            self._add([run_header(self.metas[role], role, self.token_text[role])])
        elif kind == "pass":
            tt = self.token_text.setdefault(role, {})
            tt.update(ev.get("token_text", {}))
            rec = record_from_dict(ev["record"])
            self.committed[role] = self.committed.get(role, 0) + len(rec.commits)
            self.passes[role] = self.passes.get(role, 0) + 1
            room = self.rooms.setdefault(role, DraftRoom(self.metas.get(role)))
            self._add([pass_line(rec, role, tt, self.committed[role], self.metas.get(role), room.step(rec))])
        elif kind == "done":
            trace = Trace.from_dict(ev["trace"])
            self.traces[role] = trace
            self._add([end_line(trace, role)])
        elif kind == "error":
            self.notes.append((self.error_text(ev), "err"))
            self._add([status_line(self.notes[-1][0], "err")])

    @staticmethod
    def error_text(ev: dict) -> str:
        where, msg = ev.get("where"), ev.get("message", "")
        if where == "input":
            return f"Cannot run: {msg}"
        if where == "model":
            return f"Cannot run: the model is not available: {msg}"
        if where == "drafter":
            return f"A drafter's run failed ({msg}); the runs after it go on, the standard decoder's among them."
        return f"The run failed: {msg}"

    def due(self, now: float | None = None) -> bool:
        """True when enough time has passed since the last update sent (then counts it as sent)."""
        now = time.monotonic() if now is None else now
        if now - self.last_sent >= self.every_s:
            self.last_sent = now
            return True
        return False

    @property
    def main(self) -> Trace | None:
        """The drafter run shown (the race's next drafter when the first one failed)."""
        return self.traces.get("main") or next((t for r, t in self.traces.items() if r != "base"), None)

    @property
    def race(self) -> list[Trace]:
        return [t for r, t in self.traces.items() if r not in ("main", "base") and t is not self.main]

    @property
    def base(self) -> Trace | None:
        return self.traces.get("base")

    def small_trees(self) -> bool:
        """Whether the run kept its trees small or drafted none under budget auto (a race never runs at auto:
        inputs.plan_run): the page then offers the same run with larger trees (small_trees_note says why)."""
        main = self.main
        return main is not None and bool(small_trees_note(main))

    def window_filled(self) -> bool:
        """Whether a threshold run below STRICTER_TAU had nothing to draft: each pass filled its window by itself
        (a confident model at tau 0.9): the page then offers the same run at a stricter tau, which leaves SPOT-Sets
        slots to guess."""
        main = self.main
        return (main is not None and main.meta.mode == "threshold" and main.meta.threshold < STRICTER_TAU
                and main.meta.drafter != "none" and nothing_to_draft(main))

    def figures(self) -> RunFigures | None:
        """This run's figures for the next run's comparison (None for a race or without both runs)."""
        if self.race or self.main is None or self.base is None:
            return None
        return RunFigures.of(self.main, self.base)

    def finish(self, before: RunFigures | None = None) -> str:
        """Close the timeline: the headline and the final status line (with `before`, the figures of the visitor's
        run before this one: compared where only the budget or tau differs). Returns the final status text."""
        main, base = self.main, self.base
        shown = main or base
        if shown is None:
            text = next((m for m, k in self.notes if k == "err"), "No run finished.")
            self._add([{**status_line(text, "err"), "final": True}])
            return text
        c = shown.counters
        race = self.race
        by = f" by {drafter_name(shown.meta.drafter)}" if race else ""  # (the other lanes' counts follow)
        # (short: on a phone it sits above the views; the headline under it has the figures in full)
        slots = (f"{c.generated_tokens} tokens of text, then end-of-text: {c.commits} slots"
                 if c.commits != c.generated_tokens else f"{c.generated_tokens} tokens")
        text = f"Done: {slots} in {c.target_passes} target passes{by} ({times(c.mean_accepted_length)} a pass)"
        if race:
            text += "; " + ", ".join(f"{drafter_name(t.meta.drafter)} {t.counters.target_passes}" for t in race)
        if main is not None and base is not None:
            same = all(t.tokens == base.tokens for t in [main] + race)
            text += (f"; the standard decoder {base.counters.target_passes}, output "
                     + ("identical ✓" if same else "DIFFERS ✗"))
        if c.generated_tokens >= shown.meta.gen_length:
            most = self.longest is not None and shown.meta.gen_length >= self.longest[0]
            text += (f"; cut at the length limit ({shown.meta.gen_length} tokens) before the text ended: "
                     + (f"{self.longest[1]}" if most else "a longer generation length lets it finish"))
        if shown.meta.prompt_truncated:  # (next to the totals: the output read without its beginning)
            text += (f". The prompt was longer than the context allows: its beginning was dropped (kept its last "
                     f"{len(shown.meta.prompt_tokens)} tokens)")
        text += self.plan_note
        now = self.figures()  # (the comparison first: an offer's reason stays next to the button that ends the line)
        if now is not None:
            text += now.against(before)
        if self.window_filled():
            text += (f". At tau {main.meta.threshold:g} every pass committed all the masked slots of the block it was "
                     "decoding at once, so SPOT-Sets had nothing left to guess")
        if main is not None and main.meta.budget_auto:
            text += small_trees_note(main)
        failed = [m for m, k in self.notes if k == "err"]
        if failed:
            text = failed[0] + " " + text
        self._add([summary(main or base, base if main is not None else None, self.race),
                   {**status_line(text + ".", "ok" if not failed else "err"), "final": True}])
        return text
