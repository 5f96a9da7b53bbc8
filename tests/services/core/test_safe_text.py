"""Untrusted text shown as text wherever markdown renders: no markup, no link, no image,
and code spans that a name with backticks cannot leave (issue 20)."""

from __future__ import annotations

import random
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ---------------------------------------------------------------------------------------
# Issue 56: an answer renders in time linear in its length
# ---------------------------------------------------------------------------------------

#: The image regex safe_answer used until issue 56: on `![a](` and n spaces it backtracked n^2
#: times (60,000 spaces held every page for 99 s). Kept here as the reference for short texts.
_OLD_IMAGE = re.compile(
    r"(?<!\\)!\[([^\[\]\n]*)\]\(\s*<?([^()\s<>]*)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
PIECES = (
    "![", "](", "[", "]", "(", ")", " ", "    ", "\\", "\n", "\t", "<img src=http://e.test/x.png>",
    "<", ">", '"', "'", "`", "``", "```\n", "~~~\n", "http://e.test/", "www.e.test", "a@b", "word",
)  # fmt: skip


def _best_of(runs: int, text: str) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        safe_text.safe_answer(text)
        times.append(time.perf_counter() - started)
    return min(times)


#: What comes before a long run in a generated answer: the starts of the constructs a scanner
#: reads on until something ends them.
OPENERS = ("![a](", "![a](<", '![a]( "', "![a]( '", "[x]: ", "```", "`", "[", "<", "\\", "~~~\n")


class _Plan:
    """A random answer at any size: 50,000 characters of short pieces, and four long runs (an
    opener, then one piece again and again) among them, drawn once; a longer answer has longer
    runs in the same places, so the times of two sizes can be compared."""

    def __init__(self, rng: random.Random, pieces: tuple[str, ...]) -> None:
        self.short: list[str] = []
        while sum(map(len, self.short)) < 50_000:
            self.short.append(rng.choice(pieces))
        openers = [o for o in OPENERS if set(o) & set("`~") <= set("".join(pieces))]
        self.runs = [
            (rng.randrange(len(self.short)), rng.choice(openers), rng.choice(pieces)) for _ in range(4)
        ]

    def answer(self, size: int) -> str:
        out = list(self.short)
        for place, opener, piece in sorted(self.runs, reverse=True):
            out.insert(place, opener + piece * ((size - 50_000) // 4 // len(piece)))
        return "".join(out)[:size]


def _random_answer(rng: random.Random, size: int, pieces: tuple[str, ...] = PIECES) -> str:
    return _Plan(rng, pieces).answer(size)


def test_the_issue_answer_and_100k_character_answers_render_in_under_50_ms() -> None:
    rng = random.Random(56)
    answers = {
        "the issue's": "![a](" + " " * 60_000,
        "100k spaces": "![a](" + " " * 100_000 + "x",
        "prose": ("The **quick** brown [fox](http://x.test) jumps. " * 2_100)[:100_000],
        "lines": "a\n" * 50_000,
        "random": _random_answer(rng, 100_000),
    }
    for name, answer in answers.items():
        assert _best_of(3, answer) < 0.05, name
    assert safe_text.safe_answer("![a](" + " " * 60_000 + ")").startswith("\\[image not loaded: a\\]")


def _grows_linearly(half: str, whole: str) -> None:
    """Twice the text takes at most about twice the time (3x, and 10 ms for the clock). Each is
    the best of five runs, taken in turns; a busy two-core machine stretches single runs, so a
    miss is measured again, twice at most (a quadratic scan misses every time)."""
    for _ in range(3):
        best_half = best_whole = float("inf")
        for _ in range(5):
            best_half = min(best_half, _best_of(1, half))
            best_whole = min(best_whole, _best_of(1, whole))
        if best_whole < 3 * best_half + 0.01:
            return
    raise AssertionError(f"100k characters in {best_half:.4f} s, 200k in {best_whole:.4f} s")


@pytest.mark.parametrize("seed", range(8))
def test_random_answers_up_to_200k_characters_render_in_linear_time(seed: int) -> None:
    rng = random.Random(seed)
    pieces = PIECES if seed % 2 else tuple(p for p in PIECES if "`" not in p and "~" not in p)
    plan = _Plan(rng, pieces)
    half, whole = plan.answer(100_000), plan.answer(200_000)
    _grows_linearly(half, whole)
    for answer in (half, whole):
        safe = safe_text.safe_answer(answer)
        assert "![" not in safe
        if pieces is not PIECES:  # no code: every "<" and "](" of the answer shows as text
            assert re.search(r"(?<!\\)<", safe) is None and "](" not in safe


@pytest.mark.parametrize("opener", OPENERS)
@pytest.mark.parametrize("piece", [" ", "\n", '"', "`", "\\", "[", "]("])
def test_an_opener_then_one_piece_200k_times_renders_in_linear_time(opener: str, piece: str) -> None:
    def answer(size: int) -> str:
        return opener + piece * (size // len(piece)) + "x"

    _grows_linearly(answer(100_000), answer(200_000))


@settings(max_examples=1500, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            ["!", "[", "]", "(", ")", "<", ">", '"', "'", " ", "\n", "\t", "a", "\\"]
        ),
        max_size=40,
    )
)
def test_the_image_scanner_reads_what_the_old_image_regex_read(text: str) -> None:
    def placeholder(match: re.Match[str]) -> str:
        return safe_text._image_placeholder(match.group(1), match.group(2))

    assert safe_text._images_as_text(text) == _OLD_IMAGE.sub(placeholder, text)
