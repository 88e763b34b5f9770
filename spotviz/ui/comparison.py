"""The visitor's run before, compared with the run they start next: the figures a finished run measured (RunFigures)
and each page's last one (RunsBefore), so that a run that differs only in its tree budget or tau (what the larger-trees
and stricter-tau offers start) says how the two compare in its status line: fewer passes, but faster?"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..trace import Trace
from ..views.headline import SAME_RUN_FIELDS, drafted_passes, same_run, speed_words, times


@dataclass(frozen=True)
class RunFigures:
    """What a finished run (a drafter against the standard decoder, not a race) measured."""

    key: tuple  # every setting but the budget and tau: runs with the same key differ only in those
    budget: str  # "auto" or the fixed budget
    tau: float | None  # where the mode reads it (threshold mode), else None
    passes: int
    base_passes: int
    wall_ratio: float  # the standard decoder's wall-clock over the drafter's, in the same run (one timing each)
    drafted: bool = True  # False: no pass drafted a tree (the standard decoder's work: its ratio is timing noise)

    @classmethod
    def of(cls, main: Trace, base: Trace) -> "RunFigures | None":
        """The figures of a drafter run and its standard-decoder run (None where they are not comparable)."""
        m = main.meta
        if m.drafter == "none" or not same_run(main, base) or main.counters.wall_s <= 0:
            return None
        key = tuple(getattr(m, f) for f in SAME_RUN_FIELDS) + (m.drafter, m.coupled_noise, m.cross_window,
                                                                 m.min_path_prob, m.device)
        return cls(key, "auto" if m.budget_auto else str(m.budget), m.threshold if m.mode == "threshold" else None,
                   main.counters.target_passes, base.counters.target_passes,
                   base.counters.wall_s / main.counters.wall_s, drafted=bool(drafted_passes(main)))

    def against(self, before: "RunFigures | None") -> str:
        """The status line's comparison with the run before ("" where that run differed in more than the budget or
        tau, or in neither)."""
        if before is None or before.key != self.key:
            return ""
        changed = ", ".join(([f"budget {before.budget}"] if before.budget != self.budget else [])
                            + ([f"tau {before.tau:g}"] if before.tau != self.tau else []))
        if not changed:
            return ""
        base = (f": the standard decoder took {self.base_passes} passes now, {before.base_passes} then"
                if self.base_passes != before.base_passes else "")
        passes = (f"the same {self.passes} passes" if self.passes == before.passes else
                  f"{self.passes} passes instead of {before.passes}")
        now, then = (times(r.base_passes / max(r.passes, 1)) for r in (self, before))
        fewer = ("as many as the standard decoder both times" if now == then == "1.00" else
                 f"{now}× fewer than the standard decoder" + (" both times" if now == then else f" instead of {then}×"))
        speed = (f"{self.speed()} both times" if self.speed() == before.speed() else
                 f"{self.speed()} where the run before drafted nothing" if not before.drafted else
                 f"nothing drafted, instead of {before.speed()}" if not self.drafted else
                 f"{self.speed()} instead of {before.speed()}")  # ("1.27× slower instead of the same work": awkward)
        return f". Against your run before at {changed}: {passes} ({fewer}{base}), {speed} (wall-clock, one timing " \
               "each)"

    def speed(self) -> str:
        """The wall-clock as the run's headline said it ("the same work as standard" where nothing was drafted)."""
        return speed_words(self.wall_ratio) if self.drafted else "the same work as standard"


class RunsBefore:
    """Each page's last finished run (RunFigures, None for a race), by the page's session hash, the last MAX_PAGES
    pages only: kept on the server rather than in a page state, so /run's parameters stay the controls alone."""

    MAX_PAGES = 512

    def __init__(self):
        self._runs: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, page: str | None) -> RunFigures | None:
        with self._lock:
            return self._runs.get(page) if page else None

    def put(self, page: str | None, figures: RunFigures | None) -> None:
        if not page:
            return
        with self._lock:
            self._runs[page] = figures
            self._runs.move_to_end(page)
            while len(self._runs) > self.MAX_PAGES:
                self._runs.popitem(last=False)
