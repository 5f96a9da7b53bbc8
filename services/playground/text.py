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
import itertools
import re
from dataclasses import dataclass

# The escaping helpers live in services.core.safe_text (every page uses them); the Playground
# page reaches them through this module as it always has.
from services.core.safe_text import code_span, md_line, md_text, safe_answer  # noqa: F401 - re-exported
from services.engines import SamplingParams

# ---------------------------------------------------------------------------------------
# The word diff, as HTML built only from escaped pieces
# ---------------------------------------------------------------------------------------

# Words, runs of white space and single punctuation marks are tokens of their own: with
# white space alone as the separator "Paris." and "Paris" were two unrelated tokens, shown
# struck and inserted side by side as "Paris.Paris", where only the full stop differs.
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


#: The most word (or line) pairs one diff of two answers weighs, in all its comparisons:
#: SequenceMatcher's time grows with the product of the lengths it compares (two answers of
#: 8,000 words took 52 s in the server's thread; a million pairs take about 0.1 s). Past it, a
#: passage is marked whole and the diff says so.
MAX_DIFF_PAIRS = 1_000_000
TOO_LONG_NOTE = "Some passages are too long to compare word by word: each is marked as a whole."


class _Work:
    """What is left of one diff's MAX_DIFF_PAIRS."""

    def __init__(self) -> None:
        self.left = MAX_DIFF_PAIRS
        #: Whether some passage was marked whole for want of it.
        self.short = False

    def take(self, a_count: int, b_count: int) -> bool:
        """Whether a comparison of so many against so many fits what is left (then taken)."""
        # A comparison's own setup costs about as much as a hundred pairs (50,000 one-word
        # lines against as many took 1.6 s, one small comparison per line).
        cost = max(a_count * b_count, 100)
        if cost > self.left:
            return False
        self.left -= cost
        return True

    def whole(self, a: str, b: str) -> list[tuple[str, str]]:
        """Two passages marked whole, one struck and one inserted, for want of work left."""
        self.short = True
        return _segments([("change", a, b)])


def _changes(left: list[str], right: list[str]) -> list[tuple[str, str, str]]:
    """("equal"|"change", left text, right text) runs, a change's sides kept together."""
    runs: list[tuple[str, str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=left, b=right, autojunk=False).get_opcodes():
        runs.append(
            ("equal" if tag == "equal" else "change", "".join(left[i1:i2]), "".join(right[j1:j2]))
        )
    # A lone space (or line break) matched between two changes cut answers that really differ
    # into alternating one-word pieces; it joins the changes around it, so each side reads
    # as a phrase.
    merged: list[tuple[str, str, str]] = []
    for index, (kind, a_text, b_text) in enumerate(runs):
        between = 0 < index < len(runs) - 1 and runs[index - 1][0] == runs[index + 1][0] == "change"
        if kind == "equal" and between and not a_text.strip():
            kind = "change"
        if kind == "change" and merged and merged[-1][0] == "change":
            _, a_before, b_before = merged.pop()
            a_text, b_text = a_before + a_text, b_before + b_text
        merged.append((kind, a_text, b_text))
    return merged


def _segments(changes: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    segments: list[tuple[str, str]] = []
    for tag, a_text, b_text in changes:
        if tag == "equal":
            segments.append(("equal", a_text))
            continue
        if a_text:
            segments.append(("delete", a_text))
        if b_text:
            segments.append(("insert", b_text))
    return segments


def _word_segments(a: str, b: str, work: _Work) -> list[tuple[str, str]]:
    """Word against word where `work` allows; else line against line, then word against word
    within each changed passage that it allows; what is left is marked whole."""
    left, right = _TOKEN.findall(a), _TOKEN.findall(b)
    if work.take(len(left), len(right)):
        return _segments(_changes(left, right))
    a_lines, b_lines = a.splitlines(keepends=True), b.splitlines(keepends=True)
    if (len(a_lines) < 2 and len(b_lines) < 2) or not work.take(len(a_lines), len(b_lines)):
        return work.whole(a, b)
    segments: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=a_lines, b=b_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a_text, b_text = "".join(a_lines[i1:i2]), "".join(b_lines[j1:j2])
        if tag == "equal":
            segments.append(("equal", a_text))
            continue
        a_words, b_words = _TOKEN.findall(a_text), _TOKEN.findall(b_text)
        if work.take(len(a_words), len(b_words)):
            segments.extend(_segments(_changes(a_words, b_words)))
        else:
            segments.extend(work.whole(a_text, b_text))
    return segments


def word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """Word-level differences between two answers: ("equal"|"delete"|"insert", text), within
    MAX_DIFF_PAIRS (past it, passages are marked whole)."""
    return _word_segments(a, b, _Work())


_DIFF_STYLE = (
    "white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.6; "
    "font-family: inherit; font-size: 0.95rem"
)
_DELETE_STYLE = "background: rgba(255, 75, 75, 0.22); text-decoration: line-through; border-radius: 3px"
_INSERT_STYLE = "background: rgba(33, 195, 84, 0.22); text-decoration: none; border-radius: 3px"
# A struck phrase and its replacement touched ("redblue"): a gap keeps them two phrases
# without adding a character to either answer.
_GAP = "; margin-right: 0.3em"
_NOTE_STYLE = "opacity: 0.7; font-size: 0.85rem; margin-top: 0.5em"


def _marked(segments: list[tuple[str, str]]) -> str:
    parts = []
    for index, (op, text) in enumerate(segments):
        piece = html.escape(text, quote=True)
        if op == "delete":
            replaced = index + 1 < len(segments) and segments[index + 1][0] == "insert"
            parts.append(f'<del style="{_DELETE_STYLE}{_GAP if replaced else ""}">{piece}</del>')
        elif op == "insert":
            parts.append(f'<ins style="{_INSERT_STYLE}">{piece}</ins>')
        else:
            parts.append(piece)
    return "".join(parts)


def diff_html(a: str, b: str) -> str:
    """The word diff of two answers as one HTML block for st.html. Markdown is not involved
    (a paragraph break can no longer cut a highlight in two) and every piece of the answers
    goes through html.escape, so an answer shows as its own characters and loads nothing;
    line breaks show because the block keeps white space (pre-wrap)."""
    work = _Work()
    body = _marked(_word_segments(a or "", b or "", work)) or "<em>both answers are empty</em>"
    return f'<div class="pg-diff" style="{_DIFF_STYLE}">{body}</div>' + _note(work)


def _note(work: _Work) -> str:
    if not work.short:
        return ""
    return f'<div class="pg-diff-note" style="{_NOTE_STYLE}">{html.escape(TOO_LONG_NOTE)}</div>'


@dataclass(frozen=True)
class LineRow:
    """One row of the side-by-side view: a line of each answer (None where that answer has no
    line here), and whether the two differ."""

    left: str | None
    right: str | None
    changed: bool


def line_rows(a: str, b: str) -> list[LineRow]:
    """The two answers line by line, aligned: equal lines share a row, a changed block pairs
    its lines in order, and a line only one answer has faces an empty cell."""
    return _line_rows(a, b, _Work())


def _line_rows(a: str, b: str, work: _Work) -> list[LineRow]:
    left, right = (a or "").splitlines(), (b or "").splitlines()
    if not work.take(len(left), len(right)):
        # Too many lines to align within the bound: line n faces line n.
        work.short = True
        pairs = itertools.zip_longest(left, right)
        return [LineRow(x, y, x != y) for x, y in pairs]
    rows: list[LineRow] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=left, b=right, autojunk=False).get_opcodes():
        if tag == "equal":
            rows.extend(LineRow(line, line, False) for line in left[i1:i2])
            continue
        rows.extend(LineRow(x, y, True) for x, y in itertools.zip_longest(left[i1:i2], right[j1:j2]))
    return rows


_SIDE_TABLE_STYLE = "width: 100%; border-collapse: collapse; table-layout: fixed; font-size: 0.95rem"
_SIDE_CELL_STYLE = (
    "width: 50%; vertical-align: top; padding: 2px 8px; white-space: pre-wrap; "
    "overflow-wrap: anywhere; border: 1px solid rgba(128, 128, 128, 0.25)"
)
_SIDE_CHANGED = "; background: rgba(255, 200, 0, 0.08)"


#: The most rows the side-by-side view draws: past them its table says where it stops (the
#: word diff shows every line).
MAX_SIDE_ROWS = 2_000


def side_by_side_html(a: str, b: str) -> str:
    """The two answers in two columns, line against line, changed lines tinted and their words
    marked (struck on the left, green on the right); escaped as diff_html is."""
    rows = []
    work = _Work()
    all_rows = _line_rows(a, b, work)
    for row in all_rows[:MAX_SIDE_ROWS]:
        style = _SIDE_CELL_STYLE + (_SIDE_CHANGED if row.changed else "")
        words = None
        if row.changed and row.left is not None and row.right is not None:
            words = _word_segments(row.left, row.right, work)
        cells = []
        for line, dropped in ((row.left, "insert"), (row.right, "delete")):
            if line is None:
                text = ""
            elif words is not None:
                text = _marked([(op, t) for op, t in words if op != dropped])
            else:
                text = html.escape(line, quote=True)
            cells.append(f'<td style="{style}">{text}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    if not rows:
        return '<div class="pg-diff-lines"><em>both answers are empty</em></div>'
    table = f'<table style="{_SIDE_TABLE_STYLE}">{"".join(rows)}</table>'
    cut = ""
    if len(all_rows) > MAX_SIDE_ROWS:
        shown = f"The first {MAX_SIDE_ROWS:,} of {len(all_rows):,} lines are shown side by side."
        cut = f'<div class="pg-diff-note" style="{_NOTE_STYLE}">{shown}</div>'
    return f'<div class="pg-diff-lines">{table}</div>' + cut + _note(work)


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
