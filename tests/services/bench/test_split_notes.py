"""Issue 43: no negative times on any screen or export. A rest the engine's own times overshoot
(its clock's resolution or rounding) is clamped at 0 with a note saying by how much and why,
in every place a split is shown; a sum that holds by definition is not published as a
measurement."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.bench.results import TimeSplitBlock
from services.bench.stats import RequestRecord, split_block
from services.bench.time_split import block_clamp_note
from services.bench.view.split import request_words, split_lines, split_table
from services.core.measure import CLAMP_WHY, EngineTimes, time_split
from tests.services.bench.test_split_labels import pane_split

ROOT = Path(__file__).resolve().parents[3]


def overshot(index: int) -> RequestRecord:
    """llama.cpp's decode runs to the end of its last step, after the last text went out: its
    times add up to 40 ms more than the client's E2E ("rest of E2E -0.04 s" before)."""
    return RequestRecord(
        "llama",
        index,
        True,
        ttft_s=0.05,
        e2e_s=1.0,
        output_tokens=32,
        engine_times=EngineTimes(queue_s=0.0, prefill_s=0.03, decode_s=1.01 if index else 0.9),
    )


def test_a_rest_below_0_is_clamped_with_how_much_and_why() -> None:
    split = time_split(0.05, 1.0, EngineTimes(prefill_s=0.03, decode_s=1.01))
    assert split is not None
    assert split.e2e_rest_s == 0.0 and split.ttft_rest_s == pytest.approx(0.02)
    assert split.overcount_s == pytest.approx(0.04)
    assert split.clamp_note == (
        f"rest clamped at 0: the engine counted up to 40.0 ms more than the client saw ({CLAMP_WHY})"
    )
    fine = time_split(0.05, 1.0, EngineTimes(prefill_s=0.03, decode_s=0.9))
    assert fine is not None and fine.overcount_s == 0.0 and fine.clamp_note == ""


def test_every_display_of_a_split_shows_0_and_the_note() -> None:
    records = [overshot(i) for i in range(3)]
    block = split_block(records)
    assert block["clamped"] == {"requests": 2, "max_s": pytest.approx(0.04)}
    assert block["e2e_rest_s"]["min"] == 0.0
    summary = {"engines": {"llama": {"completed": 3, "time_split": block}}}
    (line,) = split_lines(summary, {"llama": "llama.cpp"})
    assert "rest clamped at 0 in 2 request(s): the engine counted up to 40.0 ms more" in line
    assert " ≈ " in line and " = " not in line  # the parts do not add up to E2E here
    table = split_table(summary)
    assert (table.filter(like="(ms)") >= 0).all().all()
    words = request_words(records[1])
    # One unit for the parts (decode took 1.01 s): the clamped rest reads 0, not -0.04.
    assert "rest of E2E 0.000 s" in words and "-" not in words and "rest clamped at 0" in words
    pane = pane_split("llama", "llamacpp", 1.0, records[1].time_split)
    assert pane is not None and "rest clamped at 0" in pane and "-" not in pane.split("rest clamped")[0]


def test_a_run_stored_with_a_negative_rest_is_shown_clamped_with_the_note() -> None:
    stored = {
        "requests": 20,
        "reported": 20,
        "source": "timings",
        "queue_reported": False,
        "prefill_s": {"mean": 0.03, "p50": 0.03, "p99": 0.03, "min": 0.03},
        "decode_s": {"mean": 1.01, "p50": 1.01, "p99": 1.01, "min": 1.01},
        "e2e_rest_s": {"mean": -0.04, "p50": -0.04, "p99": -0.01, "min": -0.04},
        "ttft_rest_s": {"mean": 0.02, "p50": 0.02, "p99": 0.02, "min": 0.02},
        "e2e_s": {"mean": 1.0},
    }
    assert block_clamp_note(TimeSplitBlock.from_json(stored)).startswith(
        "rest clamped at 0: the engine counted up to 40.0 ms"
    )
    summary = {"engines": {"llama": {"completed": 20, "time_split": stored}}}
    (line,) = split_lines(summary, {})
    assert "-0.04" not in line and "-40" not in line and "rest p50 0.0 / p99 0.0 ms" in line
    assert (split_table(summary).filter(like="(ms)") >= 0).all().all()


def test_a_sum_that_holds_by_definition_is_not_published_as_a_measurement() -> None:
    figures = (ROOT / "docs" / "figures.md").read_text()
    assert "differed from E2E by" not in figures
    assert "add up to E2E by definition; not a measurement" in figures
