"""The token canvas: the prompt, then every generated position, masked ones as a placeholder, committed ones
coloured by the pass that committed them (DESIGN.md section 6).

`canvas_html` renders plain cells, so the app can draw it live from streamed passes; `trace_canvas` draws a
finished (or replayed) trace. All token text is escaped.
"""
from __future__ import annotations

from dataclasses import dataclass

from .common import esc, pass_color

MASK_GLYPH = "▯"

CANVAS_CSS = """
.sv-canvas { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 14px;
  line-height: 1.9; white-space: pre-wrap; word-break: break-word; padding: 8px 10px; min-height: 3em;
  border: 1px solid var(--border-color-primary, #ddd); border-radius: 8px; background: var(--block-background-fill, #fff);
  color: var(--body-text-color, #222); }
.sv-head { font-family: var(--font, sans-serif); font-size: 13px; margin-bottom: 4px; color: var(--body-text-color-subdued, #555); white-space: normal; }
.sv-head b { color: var(--body-text-color, #222); }
.sv-prompt { color: var(--body-text-color-subdued, #777); font-style: italic; }
.sv-tok { border-radius: 3px; padding: 1px 0; color: #111; }
.sv-mask { color: #aaa; background: transparent; }
.sv-unused { color: #ddd; }
.sv-after { opacity: 0.45; }
.sv-new { outline: 2px solid #d62728; outline-offset: 0px; }
.sv-legend { font-family: var(--font, sans-serif); font-size: 12px; color: var(--body-text-color-subdued, #777); margin-top: 6px; white-space: normal; }
.sv-empty { font-family: var(--font, sans-serif); color: var(--body-text-color-subdued, #888); white-space: normal; }
"""


@dataclass
class Cell:
    """One committed position."""

    position: int
    text: str  # raw token text (escaped when rendered)
    pass_index: int
    step: int
    confidence: float = 0.0
    drafted: bool = False


def _token_html(text: str) -> str:
    t = esc(text).replace("\r", "")
    if "\n" in t:
        t = t.replace("\n", "↵\n")
    return t if t else "∅"


def canvas_html(prompt: str, start: int, length: int, cells: dict[int, Cell], *, title: str = "",
                latest_pass: int | None = None, end: int | None = None, finished: bool = False,
                note: str = "", passes: int | None = None) -> str:
    """HTML of the canvas: `prompt` text, then positions [start, start + length).

    `cells` maps committed positions; `end` (if given) is one past the last generated token (after it, e.g.
    past the end of text, cells are dimmed); with `finished`, positions never committed are drawn faint."""
    parts = ['<div class="sv-canvas">']
    if title:
        parts.append(f'<div class="sv-head">{title}</div>')
    parts.append(f'<span class="sv-prompt" title="prompt">{esc(prompt)}</span>')
    for pos in range(start, start + length):
        c = cells.get(pos)
        if c is None:
            cls = "sv-tok sv-mask" + (" sv-unused" if finished else "")
            tip = f"position {pos}: " + ("never decoded (generation ended earlier)" if finished else "masked")
            parts.append(f'<span class="{cls}" data-pos="{pos}" title="{esc(tip)}">{MASK_GLYPH}</span>')
            continue
        cls = "sv-tok"
        if latest_pass is not None and c.pass_index == latest_pass:
            cls += " sv-new"
        if end is not None and pos >= end:
            cls += " sv-after"
        how = "drafted, accepted from the tree" if c.drafted else "target decision"
        tip = (f"position {pos} · pass {c.pass_index} · step {c.step} · confidence {c.confidence:.3f} · {how}"
               f" · {c.text!r}")
        parts.append(f'<span class="{cls}" data-pos="{pos}" data-pass="{c.pass_index}" '
                     f'style="background:{pass_color(c.pass_index)}" title="{esc(tip)}">{_token_html(c.text)}</span>')
    n_masked = length - len([p for p in cells if start <= p < start + length])
    legend = (f"{len(cells)} committed · {n_masked} masked ({MASK_GLYPH})"
              + (f" · {passes} target passes" if passes is not None else "")
              + " · colour = the pass that committed the token (12 colours, cycling); outlined = latest pass")
    if note:
        legend = esc(note) + " · " + legend
    parts.append(f'<div class="sv-legend">{legend}</div></div>')
    return "".join(parts)


def trace_cells(trace, upto_pass: int | None = None) -> dict[int, Cell]:
    """Committed positions of `trace` (up to and including pass `upto_pass`)."""
    cells = {}
    for p in trace.passes:
        if upto_pass is not None and p.index > upto_pass:
            break
        for c in p.commits:
            cells[c.position] = Cell(c.position, trace.label(c.token), p.index, c.step, c.confidence, c.drafted)
    return cells


def trace_canvas(trace, title: str = "", finished: bool = True) -> str:
    """Canvas of a whole trace (a finished or replayed run, or a partial one while streaming)."""
    m = trace.meta
    start = len(m.prompt_tokens)
    last = trace.passes[-1].index if trace.passes else None
    return canvas_html(m.prompt, start, m.gen_length, trace_cells(trace), title=title, latest_pass=last,
                       end=start + len(trace.tokens) if finished else None, finished=finished,
                       passes=len(trace.passes))


def empty_canvas(message: str) -> str:
    return f'<div class="sv-canvas"><div class="sv-empty">{esc(message)}</div></div>'
