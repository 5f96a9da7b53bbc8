"""One rule per kind of figure (services/core/units.py), and every surface writing it the same way.

Issue 57: the same latency read "0.20 s" on Demos and "200 ms" in the Playground (one switched
to seconds at 0.1 s, the other at 1 s), beside six `_ms` helpers and nine number readers that
disagreed on NaN."""

from __future__ import annotations

import math
import re

import numpy
import pytest

from commands import ask
from services.core import units
from services.core.safe_text import md_line
from services.demos.charts import value_labels
from services.demos.common import WavesVerdict, latency_number
from services.demos.readout import ChartSpec, Series
from services.playground import Column
from services.playground import view as playground
from services.runs.comparison import format_row
from services.runs.records import format_value

# ---------------------------------------------------------------------------------------
# The unit rule
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0999, "99.9 ms"),
        (0.1, "100 ms"),
        (0.2, "200 ms"),
        (0.999, "999 ms"),
        (0.9996, "1.00 s"),  # would round to "1,000 ms": it reads as it is shown
        (1.0, "1.00 s"),
        (1.37, "1.37 s"),
        (1234.5, "1,234.50 s"),
        (0.0412, "41.2 ms"),
        (0.0042, "4.2 ms"),
        (0.000134, "0.134 ms"),
        (0.0, "0.000 ms"),
        (-0.0, "0.000 ms"),
        (-0.04, "-40.0 ms"),
        (-1.5, "-1.50 s"),
        (3, "3.00 s"),
    ],
)
def test_a_duration_is_in_ms_under_a_second_and_in_s_from_one(seconds: float, text: str) -> None:
    assert units.duration(seconds) == text


@pytest.mark.parametrize("odd", [None, math.nan, math.inf, -math.inf, True, "0.2", [0.2], 10**400])
def test_what_is_not_a_finite_number_is_never_a_figure(odd: object) -> None:
    assert units.number(odd) is None and units.to_ms(odd) is None
    for write in (units.duration, units.rate, units.count, units.usd, units.percent, units.share):
        assert write(odd) == units.MISSING, write
        assert write(odd, missing="-") == "-"
    assert units.size(odd) == units.MISSING


def test_the_reader_takes_numbers_of_every_kind_and_text_only_when_asked() -> None:
    assert units.number(3) == 3.0 and units.number(numpy.int64(3)) == 3.0
    assert units.number(numpy.float32(0.5)) == 0.5 and units.number(numpy.float64("nan")) is None
    assert units.number_text(" 1.5 ") == 1.5 and units.number_text(2) == 2.0
    for odd in ("nan", "inf", "-Infinity", "1e999", "", "1,5", "x", None, True):
        assert units.number_text(odd) is None, odd


def test_durations_side_by_side_share_one_unit() -> None:
    assert units.duration_unit([0.85, None, math.nan, math.inf]) == "ms"
    assert units.duration_unit([0.85, 1.2]) == "s" and units.duration_unit([]) == "ms"
    assert units.duration_unit([-1.5, 0.2]) == "s"
    assert units.duration_unit([0.9996]) == "s"
    # In a column in seconds, a value under a second keeps the figures it has in ms (not 0.00 s).
    assert [units.duration(v, "s") for v in (0.85, 1.2, 0.004)] == ["0.850 s", "1.20 s", "0.004 s"]
    assert units.duration(0.85, "ms") == "850 ms"
    assert units.to_ms(0.0123) == pytest.approx(12.3) and units.to_ms(0.0123456, 2) == 12.35


def test_rates_counts_money_and_per_cents() -> None:
    assert [units.rate(v) for v in (45.64, 999.94, 999.96, 1234.5)] == [
        "45.6 tok/s",
        "999.9 tok/s",
        "1,000 tok/s",
        "1,234 tok/s",
    ]
    assert units.rate(2.5, "req/s") == "2.5 req/s"
    assert units.count(12345) == "12,345" and units.count(3.0) == "3"
    assert (
        units.usd(0.0123) == "$0.0123" and units.usd(12.5) == "$12.50" and units.usd(1234) == "$1,234.00"
    )
    assert [units.percent(v) for v in (-0.853, 0.03, 0.004, -0.997, -1.0)] == [
        "-85%",
        "+3%",
        "0%",
        "-99.7%",
        "-100%",
    ]
    assert units.percent(0.97, signed=False) == "97%"
    assert [units.share(v) for v in (0.083, 0.42, 0.003)] == ["8.3%", "42%", "0.3%"]
    assert [units.size(v) for v in (512, 269e6, 1.5e9)] == ["512 B", "269.0 MB", "1.5 GB"]


# ---------------------------------------------------------------------------------------
# Every surface
# ---------------------------------------------------------------------------------------


def _playground_ttft(seconds: float) -> str:
    column = Column(engine="a", model=None, kind="vllm", status="finished", answer="", choices=[])
    column.ttft_s = seconds
    shown = playground.figures(column, playground.units([column]))
    found = re.search(r"TTFT\xa0\*\*(.+?)\*\*", shown)
    assert found is not None, shown
    return found.group(1).replace("\xa0", " ")


def _demo_latency(seconds: float) -> str:
    return latency_number("a", WavesVerdict(last_e2e_s=seconds, last_concurrency=4)).text


def _demo_chart_label(seconds: float) -> str:
    spec = ChartSpec("TTFT", "engine", "TTFT (s)", series=[Series("a", ["a"], [seconds], ["x"])])
    labels = value_labels(spec)[0]
    assert labels is not None
    return labels[0]


def _cli_ask(seconds: float) -> str:
    column = Column(engine="a", model=None, kind="vllm", status="failed", answer="", choices=[])
    column.ttft_s = seconds
    found = re.search(r"TTFT (.+?) ·", ask._text(_View([column])))
    assert found is not None
    return found.group(1)


class _View:
    def __init__(self, columns: list[Column]) -> None:
        self.columns = columns
        self.run_id, self.conversation_id, self.turn, self.status = 1, 1, 1, "finished"
        self.first_token_engine = self.fastest_engine = None


@pytest.mark.parametrize("seconds", [0.2, 0.045, 0.0005, 1.37, 0.9996])
def test_the_same_latency_reads_the_same_on_every_surface(seconds: float) -> None:
    """Issue 57: 0.2 s read "0.20 s" on Demos and "200 ms" in the Playground."""
    shown = {
        "demos big number": _demo_latency(seconds),
        "demos chart label": _demo_chart_label(seconds),
        "playground": _playground_ttft(seconds),
        "runs (page, CLI, report)": format_value("ttft_s", seconds),
        "runs comparison": format_row("ttft_s", [seconds])[0],
        "shootout ask": _cli_ask(seconds),
    }
    assert set(shown.values()) == {units.duration(seconds)}, shown


# ---------------------------------------------------------------------------------------
# The one Markdown escaper
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hostile",
    ["*bold*", "_it_", "[x](http://e)", "<b>x</b>", "`code`", "a | b", "![i](http://e/i.png)", "# h"],
)
def test_a_hostile_name_in_a_markdown_table_cell_stays_text(hostile: str) -> None:
    cell = md_line(hostile)
    # Every markup character is escaped; no unescaped `|` is left to split the table's row.
    assert not re.search(r"(?<!\\)[*_\[\]<>`|]", cell), cell
    assert "://" not in cell  # no bare address for the autolinker
    assert re.sub(r"\\(.)", r"\1", cell).replace("\u2060", "") == hostile
