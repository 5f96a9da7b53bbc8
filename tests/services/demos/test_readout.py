"""What a step stores of its outcome: the big numbers and the chart as JSON, written exactly as
the dataclasses' own fields (stored demos of every version read back the same)."""

from __future__ import annotations

import json
from dataclasses import asdict

from services.demos.readout import BigNumber, ChartSpec, Series, StepOutcome


def _chart() -> ChartSpec:
    return ChartSpec(
        title="TTFT per chat turn",
        x_title="",
        y_title="TTFT (s)",
        kind="line",
        series=[
            Series("vllm", ["turn 1", "turn 2"], [0.5, None], ["0.50 s", "—"]),
            Series("llama", [1, 2], [0.25, 0.125]),
        ],
        x_category=True,
        references=[{"y": 2.0, "label": "bound"}],
    )


def test_a_chart_is_stored_as_its_fields_in_their_order() -> None:
    chart = _chart()
    assert json.dumps(chart.to_dict()) == json.dumps(asdict(chart))
    assert ChartSpec.from_dict(chart.to_dict()) == chart


def test_a_chart_stored_without_its_later_fields_reads_with_their_defaults() -> None:
    stored = {
        "title": "t",
        "x_title": "x",
        "y_title": "y",
        "series": [{"name": "a", "x": [1], "y": [2.0], "text": None}],
    }
    chart = ChartSpec.from_dict(stored)
    assert chart == ChartSpec("t", "x", "y", series=[Series("a", [1], [2.0], None)])


def test_a_steps_numbers_are_stored_as_their_fields() -> None:
    numbers = [
        BigNumber("vllm · repeat", "0.20 s", 0.2, "-85%", "inverse", help="TTFT of the second request"),
        BigNumber("memory bandwidth", "12.0 GB/s", 12.0),
    ]
    shown = StepOutcome(numbers, _chart(), "found", {"batch": 8}, ["x: failed"]).to_dict()
    assert json.dumps(shown["numbers"]) == json.dumps([asdict(n) for n in numbers])
    assert [BigNumber(**n) for n in shown["numbers"]] == numbers
    assert list(shown) == ["numbers", "chart", "finding", "data", "errors"]
