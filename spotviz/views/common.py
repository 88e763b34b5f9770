"""Shared pieces of the views: escaping and token display strings.

Every label that comes from a trace is plain text: the browser inserts it with textContent, and the Plotly
views escape it (Plotly renders a subset of HTML in text and hover labels), so a token such as ``<script>``
shows as ``<script>``. `esc` is for the few strings Python puts into HTML itself (the report page's title).
"""
from __future__ import annotations

import html


def esc(text) -> str:
    """HTML-escape any value (quotes included)."""
    return html.escape(str(text), quote=True)


def visible_token(text: str, limit: int = 14) -> str:
    """A token's text with whitespace made visible (raw, not escaped): newline -> ↵, tab -> ⇥, space -> ·."""
    s = str(text).replace("\r", "\\r").replace("\n", "↵").replace("\t", "⇥").replace(" ", "·")
    if not s:
        s = "∅"
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s
