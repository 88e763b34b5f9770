"""Example traces shipped in assets/traces (made by scripts/make_example_traces.py with the real engine).

assets/traces/index.json lists the examples: {"examples": [{"title", "main", "baseline"}]} where main and
baseline are trace files in the same folder (baseline: the standard decoder on the same prompt and seed, or
null). Without an index, every *.json file in the folder is an example of its own.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..paths import ASSETS
from ..trace import Trace

TRACE_DIR = ASSETS / "traces"


def list_examples(folder: str | Path | None = None) -> list[dict]:
    folder = Path(folder) if folder else TRACE_DIR
    if not folder.is_dir():
        return []
    index = folder / "index.json"
    if index.is_file():
        try:
            entries = json.loads(index.read_text(encoding="utf-8")).get("examples", [])
        except (OSError, json.JSONDecodeError, AttributeError):
            entries = []
        out = []
        for e in entries:
            if isinstance(e, dict) and e.get("main") and (folder / e["main"]).is_file():
                base = e.get("baseline")
                out.append({"title": str(e.get("title") or e["main"]), "main": str(folder / e["main"]),
                            "baseline": str(folder / base) if base and (folder / base).is_file() else None})
        if out:
            return out
    return [{"title": p.stem, "main": str(p), "baseline": None}
            for p in sorted(folder.glob("*.json")) if p.name != "index.json"]


def load_example(entry: dict) -> tuple[Trace, Trace | None]:
    main = Trace.load(entry["main"])
    base = Trace.load(entry["baseline"]) if entry.get("baseline") else None
    return main, base
