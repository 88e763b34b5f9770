"""Files in and out of the app: a run's downloads (its traces and its standalone page) and uploaded traces.

Downloads live in per-run subfolders of one temporary folder; files older than `max_age_s` (and the subfolders
they leave empty) are removed whenever new ones are written. Names say model, drafter and seed in full (a
folder per run keeps them unique)."""
from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

from ..trace import Trace, TraceError


def safe_name(text: str, keep: str = "-_.") -> str:
    return "".join(ch if ch.isalnum() or ch in keep else "_" for ch in str(text)) or "_"


class TraceFiles:
    def __init__(self, folder: str | Path | None = None, max_age_s: float = 3600):
        self.folder = Path(folder) if folder else Path(tempfile.gettempdir()) / "spotviz-traces"
        self.max_age_s = max_age_s

    def cleanup(self) -> None:
        now = time.time()
        for old in [p for p in list(self.folder.glob("*")) + list(self.folder.glob("*/*")) if p.is_file()]:
            try:
                if now - old.stat().st_mtime > self.max_age_s:
                    old.unlink()
            except OSError:
                pass
        for sub in self.folder.iterdir():
            try:  # only old subfolders: a new one may be about to receive its files
                if sub.is_dir() and now - sub.stat().st_mtime > self.max_age_s and not any(sub.iterdir()):
                    sub.rmdir()
            except OSError:
                pass

    def write(self, traces: list[Trace], page: bool = False) -> list[str]:
        """Save the traces (the shown run first, the standard run last, a race's other drafters between); with
        `page`, also the run's standalone page (about 10 ms to render: live runs, examples and replays all offer
        it, as the download box says)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.cleanup()
        sub = self.folder / uuid.uuid4().hex[:6]
        sub.mkdir(exist_ok=True)
        paths = []
        for t in traces:
            m = t.meta
            p = sub / f"spotviz-{safe_name(Path(m.model).name)[:60]}-{safe_name(m.drafter, '-_')}-seed{m.seed}.json"
            t.save(p)
            paths.append(str(p))
        if page and traces:
            from ..views.report import report_html

            main = traces[0]
            base = traces[-1] if len(traces) > 1 and traces[-1].meta.drafter == "none" else None
            race = [t for t in traces[1:] if t is not base]
            html = Path(paths[0]).with_suffix(".html")
            html.write_text(report_html(main, base, race), encoding="utf-8")
            paths.append(str(html))
        return paths


def load_uploads(paths) -> tuple[Trace, Trace | None, list[Trace]]:
    """The uploaded traces as (shown run, its standard run, the other drafters of a race); raises TraceError
    with a plain message ("this is not a spotviz trace ...") for files that are not traces."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    traces = []
    for p in paths:
        name = Path(str(p)).name
        try:
            traces.append(Trace.load(p))
        except TraceError as e:
            msg = str(e)
            if "not UTF-8 text" in msg:
                msg = "this is not a spotviz trace (the file is not JSON text)"
            elif 'no "format" field' in msg or "must be a JSON object" in msg:
                msg = ("this is not a spotviz trace (JSON without the trace format; save one with Run's download or "
                       "`spotviz decode --trace-out`)")
            elif msg.startswith("not a spotviz trace"):
                msg = "this is not a spotviz trace (" + msg.split("(", 1)[-1]
            raise TraceError(f"{name}: {msg}") from None
    main, base = pair_traces(traces)
    race = [t for t in traces if t is not main and t is not base and t.meta.drafter != "none"]
    return main, base, race


def pair_traces(traces: list[Trace]) -> tuple[Trace, Trace | None]:
    """From uploaded traces, the one to show and the standard run to compare it with (if any)."""
    from ..views import same_run

    if not traces:
        raise TraceError("no trace file given")
    drafted = [t for t in traces if t.meta.drafter != "none"]
    standard = [t for t in traces if t.meta.drafter == "none"]
    main = drafted[0] if drafted else traces[0]
    base = next((t for t in standard if t is not main and same_run(main, t)), None)
    return main, base
