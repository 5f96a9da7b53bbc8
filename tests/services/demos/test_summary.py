"""A demo's stored summary as one typed record: every shape written so far reads back and is
written back unchanged, unknown keys included, and odd stored values never raise."""

from __future__ import annotations

from typing import Any

import pytest

from db.models import Run
from db.session import session_scope
from services.demos import runner
from services.demos.records import step_view
from services.demos.summary import DemoSummary

STEP = {
    "key": "cold",
    "title": "Cold prompt",
    "explanation": "The first request.",
    "status": "finished",
    "numbers": [{"label": "TTFT", "value": 0.2, "text": "0.2 s"}],
    "chart": None,
    "finding": "",
    "data": {"ttft_s": 0.2},
    "errors": [],
    "started_at": "2025-01-01T00:00:00+00:00",
    "finished_at": "2025-01-01T00:00:01+00:00",
}

#: As start_demo stores it, as the worker has it mid-run, and as a concluded demo holds it.
SHAPES: list[dict[str, Any]] = [
    {"scenario": "prefix-cache", "title": "Prefix caching", "steps": [], "awaiting": None},
    {
        "scenario": "prefix-cache",
        "title": "Prefix caching",
        "steps": [STEP, {**STEP, "key": "warm", "status": "pending"}],
        "awaiting": 1,
        "skipped_engines": {},
        "engine_versions": {"a": "b5000"},
    },
    {
        "scenario": "prefix-cache",
        "title": "Prefix caching",
        "steps": [STEP],
        "awaiting": None,
        "skipped_engines": {"dead": "connection refused"},
        "conclusion": "Caching halves TTFT. dead was left out: connection refused",
        "conclusion_headline": "Caching halves TTFT.",
        "conclusion_lines": ["dead was left out: connection refused"],
        "verdicts": {"a": {"verdict": "cache", "ratio": 0.5}},
        "a_key_from_a_later_version": [1, 2],
    },
]


@pytest.mark.parametrize("stored", SHAPES)
def test_every_written_shape_round_trips(stored: dict[str, Any]) -> None:
    assert DemoSummary.from_json(stored).to_json() == stored


def test_the_record_reads_its_parts() -> None:
    summary = DemoSummary.from_json(SHAPES[2])
    assert summary.conclusion is not None and summary.conclusion_headline == "Caching halves TTFT."
    assert summary.skipped_engines == {"dead": "connection refused"}
    assert summary.verdicts == {"a": {"verdict": "cache", "ratio": 0.5}}
    assert summary.extra == {"a_key_from_a_later_version": [1, 2]}
    assert DemoSummary.from_json(SHAPES[0]).conclusion is None


@pytest.mark.parametrize(
    "odd",
    [
        None,
        {},
        {"steps": "not a list", "awaiting": "1", "verdicts": [], "skipped_engines": 3},
        {"steps": [1, None, {"key": "ok"}], "awaiting": True, "conclusion_lines": "one"},
        {"title": 7, "engine_versions": None, "conclusion": {"text": "x"}},
    ],
)
def test_odd_stored_values_read_as_absent(odd: Any) -> None:
    summary = DemoSummary.from_json(odd)
    assert summary.awaiting is None and summary.conclusion is None and summary.title is None
    assert all(isinstance(step, dict) for step in summary.steps)
    assert summary.verdicts is None or isinstance(summary.verdicts, dict)


def test_a_finished_demo_stores_a_summary_that_round_trips(db_url: str, demo_server) -> None:  # type: ignore[no-untyped-def]
    demo_server.register("typed", "ttft=200,itl=5", cache=0.5)
    options = {"prompt_tokens": 150, "turns": 2, "max_tokens": 4}
    run_id = runner.start_demo("prefix-cache", ["typed"], options=options, background=False)
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        stored = dict(run.summary or {})
    summary = DemoSummary.from_json(stored)
    assert summary.to_json() == stored
    assert summary.scenario == "prefix-cache" and summary.conclusion is not None
    assert summary.verdicts is not None and summary.verdicts["typed"]["verdict"] == "cache"
    assert [step["status"] for step in summary.steps] == ["finished"] * len(summary.steps)


def test_times_side_by_side_share_one_unit() -> None:
    """Issue 47: a step showed "0.19 s" beside "21 ms", and its chart "3.76 s" over "21 ms".
    A step's numbers, and one chart's labels, are read in one unit; other texts are kept. The
    texts are as older demos stored them (0.19 s, 21 ms, 500 µs): the page writes them again by
    today's rule (services/core/units.py)."""
    step = {
        "key": "repeat",
        "numbers": [
            {"label": "vllm · repeat", "text": "0.19 s", "value": 0.19},
            {"label": "llama · repeat", "text": "21 ms", "value": 0.021},
            {"label": "llama · cached", "text": "24 tokens", "value": 24.0},
        ],
        "chart": {
            "title": "TTFT",
            "x_title": "",
            "y_title": "TTFT (s)",
            "series": [
                {"name": "cold", "x": ["a", "b"], "y": [3.76, 0.88], "text": ["3.76 s", "0.88 s"]},
                {
                    "name": "warm",
                    "x": ["a", "b"],
                    "y": [0.021, 0.19],
                    "text": ["21 ms", "0.19 s"],
                },
            ],
        },
    }
    view = step_view(0, step)  # type: ignore[arg-type]  # a stored step, as JSON gives it
    assert [n.text for n in view.numbers] == ["190 ms", "21.0 ms", "24 tokens"]
    assert view.chart is not None
    assert [s.text for s in view.chart.series] == [["3.76 s", "0.880 s"], ["0.021 s", "0.190 s"]]
    fast = step_view(
        0,
        {
            "numbers": [
                {"label": "a", "text": "45 ms", "value": 0.045},
                {"label": "b", "text": "500 µs", "value": 0.0005},
            ]
        },
    )  # type: ignore[arg-type]  # as stored
    assert [n.text for n in fast.numbers] == ["45.0 ms", "0.500 ms"]
