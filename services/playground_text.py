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

#: Characters that make markdown anywhere in a line: emphasis, code, links and images (`[`),
#: HTML, tables, strikethrough, entities, KaTeX's `$` and Streamlit's `:emoji:` shortcodes.
_INLINE_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~$&:])")
#: What starts a block at the head of a line: heading, quote, list, setext underline, numbered list.
_BLOCK_START = re.compile(r"^(#|>|[-+=]|\d+[.)])")
#: Shown between `!` and `[` inside code, where a backslash would be visible: the pair no
#: longer starts an image wherever the renderer decides the code ends, and looks the same.
_WORD_JOINER = "\u2060"
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INLINE_IMAGE = re.compile(r"(?<!\\)!\[([^\[\]\n]*)\]\(\s*<?([^()\s<>]*)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
_BACKTICKS = re.compile(r"`+")


# ---------------------------------------------------------------------------------------
# Markdown that can only be text
# ---------------------------------------------------------------------------------------


def _escape(line: str) -> str:
    line = _INLINE_SPECIAL.sub(r"\\\1", line)
    block = _BLOCK_START.match(line)
    return line if block is None else line[:block.end() - 1] + "\\" + line[block.end() - 1:]


def md_text(text: str) -> str:
    """Text shown literally by st.markdown/st.caption/st.error: no markup, links, images or
    icons; line breaks kept (leading spaces dropped, so no line becomes a code block)."""
    return "  \n".join(_escape(line.strip()) for line in str(text).splitlines())


def md_line(text: str | None) -> str:
    """One line of literal text (a name, a prompt summary, a widget label)."""
    return _escape(" ".join(str(text or "").split()))


def code_span(text: str | None) -> str:
    """An inline code span that shows `text` whole, backticks included: the fence is longer
    than any run of backticks inside, and the padding spaces are dropped by the renderer."""
    value = " ".join(str(text or "").split())
    if not value:
        return ""
    longest = max((len(run) for run in _BACKTICKS.findall(value)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {value} {fence}"


def safe_answer(text: str) -> str:
    """A model's answer as markdown that keeps its formatting (paragraphs, lists, code) but
    can load nothing: images become a text placeholder, and no `![` is left to form one."""
    out: list[str] = []
    for is_code, part in _split_code(text or ""):
        if is_code:
            out.append(part.replace("![", "!" + _WORD_JOINER + "["))
        else:
            part = _INLINE_IMAGE.sub(_image_placeholder, part)
            out.append(part.replace("![", "!\\["))
    return "".join(out)


def _image_placeholder(match: re.Match[str]) -> str:
    alt = md_line(match.group(1)) or "no description"
    url = md_line(match.group(2))
    return f"\\[image not loaded: {alt}{' · ' + url if url else ''}\\]"


def _split_code(text: str) -> list[tuple[bool, str]]:
    """(is_code, piece) in order: fenced blocks (an unclosed fence runs to the end, as the
    renderer does while an answer streams) and inline code spans. Getting this wrong is safe
    either way: code gets a word joiner, text gets an escape; neither can form an image."""
    pieces: list[tuple[bool, str]] = []
    prose: list[str] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.match(lines[i])
        if opened is None or (opened.group(1)[0] == "`" and "`" in lines[i][opened.end():]):
            prose.append(lines[i])
            i += 1
            continue
        fence = opened.group(1)
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), len(lines) - 1)
        pieces.extend(_split_inline("".join(prose)))
        prose = []
        pieces.append((True, "".join(lines[i:end + 1])))
        i = end + 1
    pieces.extend(_split_inline("".join(prose)))
    return pieces


def _split_inline(text: str) -> list[tuple[bool, str]]:
    """Inline code spans: a run of n backticks up to the next run of exactly n."""
    pieces: list[tuple[bool, str]] = []
    start = position = 0
    while True:
        run = _BACKTICKS.search(text, position)
        if run is None:
            break
        if run.start() > 0 and text[run.start() - 1] == "\\":
            position = run.end()
            continue
        closing = next((m for m in _BACKTICKS.finditer(text, run.end()) if len(m.group()) == len(run.group())), None)
        if closing is None:
            position = run.end()
            continue
        if run.start() > start:
            pieces.append((False, text[start:run.start()]))
        pieces.append((True, text[run.start():closing.end()]))
        start = position = closing.end()
    if start < len(text):
        pieces.append((False, text[start:]))
    return pieces


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


_DIFF_STYLE = ("white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.6; "
               "font-family: inherit; font-size: 0.95rem")
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
    finite = [v for v in values if _finite(v)]
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
    bits = [f"temperature {params.temperature if params.temperature is not None else 'default'}",
            f"max tokens {params.max_tokens or 'default'}"]
    for label, value in (("top_p", params.top_p), ("seed", params.seed), ("top_k", params.top_k),
                         ("min_tokens", params.min_tokens)):
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
