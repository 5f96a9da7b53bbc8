"""What the Playground shows as text: untrusted answers made safe to render, and figures in words.

Model answers, error bodies, prompts of stored exchanges and engine or model names are all
untrusted here: Streamlit renders markdown everywhere (captions, errors, even widget labels,
which render images), so a name with a backtick or an answer with `![x](http://...)` could
break the layout or make every viewer's browser fetch a remote URL. Each helper below turns
such text into something that can only show as the text itself. No Streamlit import: the page
decides where the text goes, these helpers decide what it may contain.
"""

from __future__ import annotations

import difflib
import html
import math
import re
from collections.abc import Iterable
from typing import Any

from services.engines import SamplingParams

# The escaping helpers live in services.safe_text (every page uses them); the Playground
# page reaches them through this module as it always has.
from services.safe_text import code_span, md_line, md_text, safe_answer  # noqa: F401 - re-exported

# ---------------------------------------------------------------------------------------
# The word diff, as HTML built only from escaped pieces
# ---------------------------------------------------------------------------------------


def word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """Word-level differences between two answers: ("equal"|"delete"|"insert", text)."""
    left = re.findall(r"\s+|\S+", a)
    right = re.findall(r"\s+|\S+", b)
    segments: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=left, b=right, autojunk=False).get_opcodes():
        if tag == "equal":
            segments.append(("equal", "".join(left[i1:i2])))
            continue
        if i2 > i1:
            segments.append(("delete", "".join(left[i1:i2])))
        if j2 > j1:
            segments.append(("insert", "".join(right[j1:j2])))
    return segments


_DIFF_STYLE = (
    "white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.6; "
    "font-family: inherit; font-size: 0.95rem"
)
_DELETE_STYLE = "background: rgba(255, 75, 75, 0.22); text-decoration: line-through; border-radius: 3px"
_INSERT_STYLE = "background: rgba(33, 195, 84, 0.22); text-decoration: none; border-radius: 3px"


def diff_html(a: str, b: str) -> str:
    """The word diff of two answers as one HTML block for st.html. Markdown is not involved
    (a paragraph break can no longer cut a highlight in two) and every piece of the answers
    goes through html.escape, so an answer shows as its own characters and loads nothing;
    line breaks show because the block keeps white space (pre-wrap)."""
    parts = []
    for op, text in word_diff(a or "", b or ""):
        piece = html.escape(text, quote=True)
        if op == "delete":
            parts.append(f'<del style="{_DELETE_STYLE}">{piece}</del>')
        elif op == "insert":
            parts.append(f'<ins style="{_INSERT_STYLE}">{piece}</ins>')
        else:
            parts.append(piece)
    body = "".join(parts) or "<em>both answers are empty</em>"
    return f'<div class="pg-diff" style="{_DIFF_STYLE}">{body}</div>'


# ---------------------------------------------------------------------------------------
# Figures in words
# ---------------------------------------------------------------------------------------


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def duration_unit(values: Iterable[float | None]) -> str:
    """One unit for durations shown side by side ("s" once any of them reaches a second),
    so the same quantity never reads "1.20 s" in one place and "850 ms" beside it."""
    finite = [v for v in values if v is not None and _finite(v)]
    return "s" if finite and max(finite) >= 1 else "ms"


def duration(seconds: float | None, unit: str = "ms") -> str:
    """A duration in the given unit; "–" when unknown (never "None" or "nan")."""
    if not _finite(seconds):
        return "–"
    assert seconds is not None
    if unit == "s":
        return f"{seconds:,.2f} s"
    ms = seconds * 1000
    return f"{ms:,.0f} ms" if abs(ms) >= 10 else f"{ms:.1f} ms"


def number(value: Any) -> str:
    """A count or rate; "–" when unknown or not a number."""
    if not _finite(value):
        return "–"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def params_summary(params: SamplingParams, system: str, schema_on: bool) -> str:
    """The parameters of the next send in one line (plain text: escape before markdown)."""
    bits = [
        f"temperature {params.temperature if params.temperature is not None else 'default'}",
        f"max tokens {params.max_tokens or 'default'}",
    ]
    for label, value in (
        ("top_p", params.top_p),
        ("seed", params.seed),
        ("top_k", params.top_k),
        ("min_tokens", params.min_tokens),
    ):
        if value is not None:
            bits.append(f"{label} {value}")
    if params.stop:
        bits.append(f"{len(params.stop)} stop string(s)")
    if params.n > 1:
        bits.append(f"n {params.n}")
    if params.ignore_eos:
        bits.append("ignore_eos")
    if schema_on:
        bits.append("JSON schema")
    if system.strip():
        bits.append("system prompt")
    return " · ".join(bits)
