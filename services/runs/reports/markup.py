"""The HTML reports' one escaping path: a template of ours, every value put into it escaped.

`fill("<li>$line</li>", line=text)` escapes `text` (html.escape, quotes included) unless it is
already `Markup`: a fragment that `fill` or `joined` built, or HTML that cannot hold text from
outside (plotly's output, made inert). So a name, a label or an error reaches a report only as
text, and a section is built without one `html.escape` call to forget.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from string import Template


class Markup(str):
    """HTML that is safe to place as it is: built by `fill`/`joined`, or trusted by `trusted`."""

    __slots__ = ()


def trusted(fragment: str) -> Markup:
    """HTML of ours or a library's that holds no outside text unescaped (a style sheet,
    plotly's inert figure, plotly.js)."""
    return Markup(fragment)


def text(value: object) -> Markup:
    """A value as HTML text: escaped, quotes included (Markup as it is)."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def fill(template: str, /, **values: object) -> Markup:
    """`template` ($name placeholders, `string.Template`) with each value escaped."""
    return Markup(Template(template).substitute({key: text(value) for key, value in values.items()}))


def joined(parts: Iterable[Markup], separator: str = "") -> Markup:
    """Fragments one after another (`separator` is ours)."""
    return Markup(separator.join(parts))
