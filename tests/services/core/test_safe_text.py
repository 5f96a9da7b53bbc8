"""Untrusted text shown as text wherever markdown renders: no markup, no link, no image,
and code spans that a name with backticks cannot leave (issue 20)."""

from __future__ import annotations

import re

import pytest

from services.core import safe_text
from services.core.safe_text import code_span, html_text, md_line, md_text
from tests.services.playground.test_text import HOSTILE

J = "\u2060"  # the word joiner the helpers put where an autolink or image would start


@pytest.mark.parametrize("answer", HOSTILE)
def test_safe_answer_leaves_no_image_syntax(answer: str) -> None:
    safe = safe_text.safe_answer(answer)
    assert "![" not in safe
    # What is left still reads the same (the word joiner is invisible), apart from placeholders.
    assert safe.replace("\u2060", "").replace("!\\[", "![").count("\n") == answer.count("\n")


def test_safe_answer_keeps_markdown_and_code_but_shows_images_as_text() -> None:
    safe = safe_text.safe_answer('# Title\n\n- **bold** item\n\n![a cat](http://evil.test/cat.png "t")')
    assert safe.startswith("# Title\n\n- **bold** item\n\n")
    assert f"image not loaded: a cat · http\\:{J}//evil.test/cat.png" in safe and "](http" not in safe
    assert (
        safe_text.safe_answer("use `![alt](src)` in markdown") == "use `!\u2060[alt](src)` in markdown"
    )
    fenced = safe_text.safe_answer("```md\n![alt](src)\n```\n")
    assert fenced == "```md\n!\u2060[alt](src)\n```\n"
    assert safe_text.safe_answer("![ref][r]") == "!\\[ref][r]"


def test_md_line_and_code_span_keep_names_inside_their_markup() -> None:
    assert (
        safe_text.md_line("my_engine*v2* `x` [l](u) :red[no] $5")
        == "my\\_engine\\*v2\\* \\`x\\` \\[l\\](u) \\:red\\[no\\] \\$5"
    )
    assert safe_text.md_line("# not a heading\n- nor a list") == "\\# not a heading - nor a list"
    assert safe_text.md_line("1. first") == "1\\. first" and safe_text.md_line(None) == ""
    assert (
        safe_text.md_text("HTTP 502:\n    <html>\n\n![x](http://e/x.png)")
        == f"HTTP 502\\:  \n\\<html\\>  \n  \n!\\[x\\](http\\:{J}//e/x.png)"
    )
    assert safe_text.code_span("plain") == "` plain `"
    assert safe_text.code_span("we`ird``model") == "``` we`ird``model ```"
    assert safe_text.code_span("`edge`") == "`` `edge` ``" and safe_text.code_span(None) == ""


def test_bare_addresses_and_emails_do_not_become_links() -> None:
    assert (
        md_line("see http://x.test/a, WWW.evil.test and me@evil.test")
        == f"see http\\:{J}//x.test/a, WWW{J}.evil.test and me{J}@evil.test"
    )
    assert (
        md_text("GET https://evil.test/?q=secret\nwww.x.test")
        == f"GET https\\:{J}//evil.test/?q=secret  \nwww{J}.x.test"
    )


@pytest.mark.parametrize("name", ["a`b", "``", "x ``` y", "`", "tail`"])
def test_a_code_span_always_holds_the_whole_name(name: str) -> None:
    span = code_span(name)
    fence = re.match(r"`+", span).group()
    # No run of backticks inside is as long as the fence: the renderer cannot close it early.
    inside = span[len(fence) : -len(fence)]
    assert span.endswith(fence) and all(len(run) < len(fence) for run in re.findall(r"`+", inside))
    assert inside.strip() == name.strip()


def test_html_text_is_one_block_of_escaped_text() -> None:
    hostile = 'a <img src="http://c/leak"> [l](http://c/)\n\n![x](http://c/i.png) `code` $x$'
    out = html_text(hostile)
    assert "<img" not in out and "\n" not in out and "![" not in out and "](" not in out
    assert out.startswith("a &lt;img src=&quot;http:" + J + "//c/leak&quot;&gt; &#91;l&#93;")
    assert "<br><br>!&#91;x&#93;" in out and "&#96;code&#96; &#36;x&#36;" in out
    assert html_text(None) == ""


def test_an_answer_keeps_its_formatting_but_its_links_show_as_text() -> None:
    answer = "**Sources**\n\n- [docs](http://x.test/a) and <http://y.test/>, www.z.test\n\n[r]: http://e.test/\n`[k](u)`"
    assert safe_text.safe_answer(answer) == (
        f"**Sources**\n\n- [docs]\\(http:{J}//x.test/a) and \\<http:{J}//y.test/>, www{J}.z.test\n\n"
        f"\\[r]: http:{J}//e.test/\n`[k](u)`"
    )
