"""Prompt sets per corpus: training prompts drawn from the training text, held-out sets shipped in assets/prompts.

* Shakespeare: the start of a speech, i.e. the speaker line plus the first words of the speech.
* Python: the start of a top-level definition (a function signature with the start of its docstring, a class
  header), a ``if __name__ == "__main__":`` block, or the opening lines of a module.
* Math: the bare question of a generated word problem (wordproblems.py); the model's prompt template adds
  "Question:" and "Answer:". The held-out set mixes held-out problems of the training families, held-out
  phrasings and held-out families.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

from ..paths import ASSETS

HELDOUT_FILE = ASSETS / "prompts" / "heldout.json"  # Shakespeare (the default corpus)
HELDOUT_FILES = {"shakespeare": HELDOUT_FILE, "python": ASSETS / "prompts" / "python-heldout.json",
                 "math": ASSETS / "prompts" / "math-heldout.json"}
MAX_PROMPT_LINES = 8


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


def code_prompts(sources: list[str], n: int, seed: int = 0, per_file: int = 3) -> list[str]:
    """`n` distinct prompts from Python source texts: definition headers (plus 0-5 words of the docstring),
    class headers, ``if __name__ == "__main__":`` blocks and module openings; at most `per_file` per source."""
    import ast

    rng = random.Random(seed)
    pools = []
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        lines = src.split("\n")
        found = []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
                head = lines[node.lineno - 1 : node.body[0].lineno - 1]
                while head and (not head[-1].strip() or head[-1].lstrip().startswith("#")):
                    head.pop()  # blank lines and comments between the header and the body
                first = node.body[0]
                if not head or len(head) > MAX_PROMPT_LINES:
                    continue
                prompt = "\n".join(head)
                is_doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
                    and isinstance(first.value.value, str)
                if is_doc:
                    doc_line = lines[first.lineno - 1]
                    indent = doc_line[: len(doc_line) - len(doc_line.lstrip())]
                    quote = doc_line.lstrip()[:3] if doc_line.lstrip()[:3] in ('"""', "'''") else None
                    if quote:  # the docstring's opening quote and its first 0-5 words, exactly as written
                        body = doc_line.lstrip()[3:]
                        ends = [m.end() for m in re.finditer(r"\S+", body)][:5]
                        k = rng.randint(0, len(ends))
                        prompt += "\n" + indent + quote + (body[: ends[k - 1]] if k else "")
                else:
                    prompt += "\n"
                found.append(prompt)
            elif isinstance(node, ast.If) and "__name__" in lines[node.lineno - 1] and "__main__" in lines[node.lineno - 1]:
                found.append(lines[node.lineno - 1] + "\n")
        opening = [ln for ln in lines[:MAX_PROMPT_LINES]]
        if opening and opening[0].startswith(('"""', "#", "import", "from")):
            found.append("\n".join(opening[: rng.randint(1, 3)]) + "\n")
        rng.shuffle(found)
        pools.append(found[:per_file])
    out, seen = [], set()
    rng.shuffle(pools)
    for i in range(per_file):  # round robin over files, for variety
        for pool in pools:
            if i < len(pool) and pool[i].strip() and pool[i] not in seen:
                seen.add(pool[i])
                out.append(pool[i])
    rng.shuffle(out)
    return out[:n]


def training_prompts(n: int, seed: int = 0, corpus: str = "shakespeare") -> list[str]:
    """Prompts drawn from the training part of a corpus (for training drafters)."""
    if corpus == "math":
        from .wordproblems import generate

        return [p.question for p in generate(n, "train", seed=10_000 + seed)]
    if corpus == "python":
        from .corpus import EOT, split_python_corpus

        return code_prompts(split_python_corpus()["train"].split(EOT), n, seed, per_file=1)
    from .corpus import split_corpus

    return speech_prompts(split_corpus()["train"], n, seed)


def trained_corpus(target) -> str | None:
    """The corpus an embedded target was trained on, from its folder's training.json (None where the target has no
    such record: a published model, a folder without one)."""
    src = getattr(getattr(target, "info", None), "source", None) or getattr(target, "source", None)
    if not src:
        return None
    try:
        corpus = json.loads((Path(src) / "training.json").read_text()).get("config", {}).get("corpus", "shakespeare")
    except (OSError, ValueError, AttributeError):
        return None
    return corpus if isinstance(corpus, str) else None


def corpus_of(target) -> str:
    """The corpus whose prompts fit a target: an embedded target's own (from its training.json); word problems for a
    published model (a family of targets/families.py: chat and base models alike write worked problems, and SPOT's
    own demo is a GSM8K problem); "shakespeare" when unknown."""
    corpus = trained_corpus(target)
    if corpus is None and (getattr(getattr(target, "info", None), "extra", None) or {}).get("family"):
        return "math"
    return corpus if corpus in HELDOUT_FILES else "shakespeare"


def heldout_prompts(target=None) -> list[str]:
    """The shipped held-out prompt set that fits a target's corpus."""
    return load_prompts(HELDOUT_FILES[corpus_of(target)] if target is not None else HELDOUT_FILE)


def load_prompts(path: str | Path | None = None, what: str = "prompt file") -> list[str]:
    """A prompt file: a JSON list of strings, or plain text with one prompt per blank-line-separated paragraph.
    Every error is a ValueError "WHAT PATH: what is wrong" (`what`: how the caller names it, e.g. the CLI's flag)."""
    p = Path(path) if path else HELDOUT_FILE
    if p.is_dir():
        raise ValueError(f"{what} {p}: is a folder; give a prompt file")
    if not p.is_file():
        raise ValueError(f"{what} {p}: no such file")
    try:
        raw = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{what} {p}: not UTF-8 text (a JSON list of strings, or plain text with a blank "
                         "line between prompts)") from None
    except OSError as e:
        raise ValueError(f"{what} {p}: cannot be read ({e.strerror or e})") from None
    if p.suffix == ".json":
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ValueError(f"{what} {p}: not valid JSON (the first error at line {e.lineno}, column "
                             f"{e.colno})") from None
        if not isinstance(data, list) or not all(isinstance(x, str) and x.strip() for x in data):
            raise ValueError(f"{what} {p}: must hold a JSON list of non-empty strings")
        prompts = data
    else:
        prompts = [x.strip("\n") for x in raw.split("\n\n") if x.strip()]
    if not prompts:
        raise ValueError(f"{what} {p}: holds no prompts")
    return prompts
