"""Playground text: untrusted answers and names shown as text (no markup, nothing loaded),
the word diff as escaped HTML, and figures that never read "None", "nan" or mixed units."""

from __future__ import annotations

import re
import time

import pytest

from services.engines import SamplingParams
from services.playground import text as ptext

HOSTILE = [
    "First paragraph.\n\n[inference: server] second *para* with `code` and a [link](http://x.test)",
    "```html\n<script>alert(1)</script>\n<img src=http://evil.test/a.png>\n```\nafter the fence",
    "<img src=http://evil.test/b.png onerror=alert(1)> & &amp; \"quoted\" 'single'",
    "![track](http://evil.test/c.png) ![ref][r]\n\n[r]: http://evil.test/d.png",
    "nested [![badge](http://evil.test/e.svg)](http://x.test) and \\![escaped](http://evil.test/f.png)",
    "unclosed ```\n![in fence](http://evil.test/g.png)",
    "``code with ` inside ![x](http://evil.test/h.png)`` then ![y](http://evil.test/i.png)",
    'a\r\nb\tc   d\n\n\n   indented ![z](<http://evil.test/j.png> "title")',
]


@pytest.mark.parametrize("answer", HOSTILE)
def test_diff_html_is_only_escaped_text_in_ins_and_del(answer: str) -> None:
    other = answer.replace("a", "o", 3) + "\n\nextra paragraph"
    markup = ptext.diff_html(answer, other)
    assert set(re.findall(r"</?([a-zA-Z]+)", markup)) <= {"div", "del", "ins"}
    assert markup.startswith('<div class="pg-diff" style="white-space: pre-wrap;')
    # Unescaping the pieces gives back both texts exactly: nothing dropped, nothing added.
    import html

    def text_of(drop: str) -> str:
        kept = re.sub(rf"<{drop} [^>]*>.*?</{drop}>", "", markup, flags=re.DOTALL)
        return html.unescape(re.sub(r"<[^>]+>", "", kept))

    assert text_of("ins") == answer and text_of("del") == other


def test_diff_html_keeps_paragraphs_and_marks_changes() -> None:
    markup = ptext.diff_html("one [inference: a]\n\ntwo", "one [inference: b]\n\ntwo")
    assert "[inference:" in markup and "\n\ntwo" in markup
    assert re.search(r"<del [^>]*>a</del><ins [^>]*>b</ins>\]", markup)
    assert "both answers are empty" in ptext.diff_html("", "")


def test_word_diff_keeps_punctuation_and_spaces_apart_from_words() -> None:
    # "Paris." against "Paris": only the full stop differs (it used to be one struck token
    # "Paris." then an inserted "Paris", read as "Paris.Paris").
    assert ptext.word_diff("Paris.", "Paris") == [("equal", "Paris"), ("delete", ".")]
    assert ptext.word_diff("It is Paris.", "Paris, it is.") == [
        ("delete", "It"),
        ("insert", "Paris, it"),
        ("equal", " is"),
        ("delete", " Paris"),
        ("equal", "."),
    ]
    # Answers that really differ read as whole phrases, not word against word.
    assert ptext.word_diff("the red fox jumps", "a blue dog jumps") == [
        ("delete", "the red fox"),
        ("insert", "a blue dog"),
        ("equal", " jumps"),
    ]


def test_diff_html_keeps_a_gap_between_a_struck_phrase_and_its_replacement() -> None:
    markup = ptext.diff_html("the red fox", "the blue fox")
    assert re.search(r'<del style="[^"]*margin-right: 0.3em">red</del><ins [^>]*>blue</ins> fox', markup)
    assert "margin-right" not in ptext.diff_html("the fox", "the fox ran")


def test_line_rows_align_the_answers_line_against_line() -> None:
    rows = ptext.line_rows("intro\nold line\nend", "intro\nnew line\nend\nmore")
    assert rows == [
        ptext.LineRow("intro", "intro", False),
        ptext.LineRow("old line", "new line", True),
        ptext.LineRow("end", "end", False),
        ptext.LineRow(None, "more", True),
    ]


@pytest.mark.parametrize("answer", HOSTILE)
def test_side_by_side_html_is_escaped_text_in_two_columns(answer: str) -> None:
    other = answer.replace("a", "o", 3) + "\nextra line"
    markup = ptext.side_by_side_html(answer, other)
    assert set(re.findall(r"</?([a-zA-Z]+)", markup)) <= {"div", "table", "tr", "td", "del", "ins"}
    import html

    cells = re.findall(r"<td [^>]*>(.*?)</td>", markup, flags=re.DOTALL)
    left = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells[0::2]]
    right = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells[1::2]]
    assert "\n".join(x for x in left if x) == "\n".join(line for line in answer.splitlines() if line)
    assert "\n".join(x for x in right if x) == "\n".join(line for line in other.splitlines() if line)
    assert "both answers are empty" in ptext.side_by_side_html("", "")


def _unmarked(markup: str, drop: str) -> str:
    """The text a diff's markup shows, without the `drop` pieces (ins or del) and its note."""
    import html

    kept = re.sub(r'<div class="pg-diff-note".*?</div>', "", markup, flags=re.DOTALL)
    kept = re.sub(rf"<{drop} [^>]*>.*?</{drop}>", "", kept, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "", kept))


def test_long_answers_are_compared_within_a_bound_and_the_page_says_so() -> None:
    """Issue 57: SequenceMatcher over words took 52 s on two answers of 8,000 words (its time
    grows with the product of their lengths) in the server's thread, each time the diff showed."""
    import random

    rng = random.Random(57)
    words = ["the", "a", "of", "to", "and", "in", "is", "it", "that", "for"]
    paragraph = [" ".join(rng.choice(words) for _ in range(300)) for _ in range(60)]
    one = ("\n\n".join(paragraph) + " " + " ".join(rng.choice(words) for _ in range(8000)))[:100_000]
    two = (
        "\n\n".join(p[::-1] for p in paragraph) + " " + " ".join(rng.choice(words) for _ in range(8000))
    )[:100_000]
    for a, b in (
        (one, two),
        (one, one[:50_000] + "changed" + one[50_000:]),
        ("x\n" * 50_000, "y\n" * 50_000),
    ):
        started = time.perf_counter()
        markup = ptext.diff_html(a, b)
        assert time.perf_counter() - started < 1
        assert _unmarked(markup, "ins") == a and _unmarked(markup, "del") == b
        started = time.perf_counter()
        ptext.side_by_side_html(a, b)
        assert time.perf_counter() - started < 1
    assert "too long to compare word by word" in ptext.diff_html(one, two)
    assert "The first 2,000 of 50,000 lines are shown side by side." in ptext.side_by_side_html(
        "x\n" * 50_000, "y\n" * 50_000
    )
    assert "pg-diff-note" not in ptext.diff_html("the red fox", "the blue fox")


def test_params_summary() -> None:
    assert (
        ptext.params_summary(SamplingParams(), "", False) == "temperature default · max tokens default"
    )
    summary = ptext.params_summary(
        SamplingParams(
            temperature=0.3, max_tokens=64, seed=7, stop=("a", "b"), n=2, top_k=5, ignore_eos=True
        ),
        "Be brief.",
        True,
    )
    assert summary == (
        "temperature 0.3 · max tokens 64 · seed 7 · top_k 5 · 2 stop string(s) · n 2 · ignore_eos"
        " · JSON schema · system prompt"
    )
