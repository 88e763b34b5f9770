"""Prompt sets: training prompts drawn from the training plays, and the held-out set shipped in assets/.

A prompt is the start of a speech: the speaker line plus the first words of the speech."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

from ..paths import ASSETS

HELDOUT_FILE = ASSETS / "prompts" / "heldout.json"


def speech_prompts(text: str, n: int, seed: int = 0, words: tuple[int, int] = (0, 6)) -> list[str]:
    """`n` distinct prompts "SPEAKER.\\nfirst words" sampled from a play-script text."""
    starts = [m.start() for m in re.finditer(r"(?m)^[A-Z][A-Z' ]{1,30}\.\n(?=[A-Za-z])", text)]
    rng = random.Random(seed)
    rng.shuffle(starts)
    out, seen = [], set()
    for s in starts:
        head, _, rest = text[s : s + 400].partition("\n")
        first_line = rest.split("\n", 1)[0].split()
        k = rng.randint(*words)
        prompt = head + "\n" + " ".join(first_line[:k])
        if prompt not in seen:
            seen.add(prompt)
            out.append(prompt)
        if len(out) == n:
            break
    return out


def training_prompts(n: int, seed: int = 0) -> list[str]:
    from .corpus import split_corpus

    return speech_prompts(split_corpus()["train"], n, seed)


def load_prompts(path: str | Path | None = None) -> list[str]:
    """A prompt file: a JSON list of strings, or plain text with one prompt per blank-line-separated paragraph."""
    p = Path(path) if path else HELDOUT_FILE
    if not p.is_file():
        raise ValueError(f"no prompt file at {p}")
    raw = p.read_text(encoding="utf-8")
    if p.suffix == ".json":
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ValueError(f"prompt file {p} is not valid JSON: {e}") from None
        if not isinstance(data, list) or not all(isinstance(x, str) and x.strip() for x in data):
            raise ValueError(f"prompt file {p} must hold a JSON list of non-empty strings")
        return data
    prompts = [x.strip("\n") for x in raw.split("\n\n") if x.strip()]
    if not prompts:
        raise ValueError(f"prompt file {p} holds no prompts")
    return prompts
