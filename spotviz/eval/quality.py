"""Is a target a real model? Degeneracy and syntax measures of its greedy (T=0) outputs.

A model can look "confident" (high previous-pass agreement, large SPOT speed-ups) by writing one token over and
over. These measures make that visible; they are reported next to every agreement figure.

* Degeneracy of one output of n generated tokens: distinct tokens / n (want >= 25%), the largest share of one
  token (want <= 40%), the longest run of one repeated token (want <= 12).
* Syntax (Python only): cut prompt + completion at the last line that ends a complete statement, i.e. the
  longest line prefix that parses (if it ends with an open block header, ``pass`` is added to close it);
  report the share of generated lines inside that prefix.
"""
from __future__ import annotations

import ast
import warnings
from dataclasses import asdict, dataclass

DISTINCT_MIN, TOP_SHARE_MAX, RUN_MAX = 0.25, 0.40, 12


@dataclass
class OutputQuality:
    tokens: int
    distinct_share: float
    top_token_share: float
    longest_run: int
    valid_line_share: float | None = None  # Python outputs only

    @property
    def degenerate(self) -> bool:
        return self.tokens > 0 and (self.distinct_share < DISTINCT_MIN or self.top_token_share > TOP_SHARE_MAX
                                    or self.longest_run > RUN_MAX)


def token_stats(ids: list[int]) -> tuple[float, float, int]:
    """(distinct share, top token share, longest run) of a token sequence."""
    if not ids:
        return 0.0, 0.0, 0
    counts: dict[int, int] = {}
    run = best = 0
    prev = None
    for t in ids:
        counts[t] = counts.get(t, 0) + 1
        run = run + 1 if t == prev else 1
        best = max(best, run)
        prev = t
    return len(counts) / len(ids), max(counts.values()) / len(ids), best


def _parses(src: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(src)
            return True
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return False


def valid_line_share(prompt: str, completion: str) -> float:
    """Share of the completion's lines that belong to the longest prefix of prompt + completion that is valid
    Python (cut at line boundaries; a trailing open block header is closed with an indented ``pass``)."""
    lines = (prompt + completion).split("\n")
    n_prompt = prompt.count("\n")  # lines wholly in the prompt (the last prompt line is continued by the completion)
    n_gen = len(lines) - n_prompt
    if n_gen <= 0 or not completion.strip():
        return 0.0
    for k in range(len(lines), n_prompt, -1):
        head = "\n".join(lines[:k]) + "\n"
        last = lines[k - 1]
        indent = len(last) - len(last.lstrip()) + 4
        if _parses(head) or _parses(head + " " * indent + "pass\n"):
            return (k - n_prompt) / n_gen
    return 0.0


def output_quality(ids: list[int], prompt: str = "", completion: str = "", python: bool = False) -> OutputQuality:
    d, top, run = token_stats(ids)
    return OutputQuality(len(ids), d, top, run, valid_line_share(prompt, completion) if python else None)


def summarise(rows: list[OutputQuality]) -> dict:
    """Aggregate: worst-case degeneracy measures, degenerate count, mean syntax share."""
    if not rows:
        return {}
    out = {"outputs": len(rows), "degenerate_outputs": sum(r.degenerate for r in rows),
           "min_distinct_share": min(r.distinct_share for r in rows),
           "max_top_token_share": max(r.top_token_share for r in rows),
           "max_longest_run": max(r.longest_run for r in rows)}
    syn = [r.valid_line_share for r in rows if r.valid_line_share is not None]
    if syn:
        out["mean_valid_line_share"] = sum(syn) / len(syn)
    return out


def greedy_quality(target, prompts: list[str], gen_length: int = 128, python: bool | None = None) -> dict:
    """Decode every prompt greedily (exact mode, T=0) with the standard decoder and measure the outputs."""
    from ..samplers.config import DecodeConfig
    from ..samplers.standard import decode_standard

    if python is None:
        from ..embedded.prompts import corpus_of

        python = corpus_of(target) == "python"
    rows, samples = [], []
    for prompt in prompts:
        trace = decode_standard(target, prompt, DecodeConfig(mode="exact", temperature=0.0, gen_length=gen_length))
        ids = [t for t in trace.tokens if t not in target.info.eos_ids]
        rows.append(output_quality(ids, prompt, trace.text, python))
        samples.append({"prompt": prompt, "text": trace.text} | asdict(rows[-1]))
    return {"summary": summarise(rows), "outputs": samples}
