"""Continuous batching: an engine that decodes in parallel pays; one slot stays flat."""

from __future__ import annotations

import pytest

from services.demos import runner
from services.demos.batching import ramp_verdict


def test_batching_engine_against_one_slot(db_url: str, demo_server) -> None:
    demo_server.register("batched", "ttft=50,itl=20")
    demo_server.register("oneslot", "ttft=50,itl=20", slots=1)
    run_id = runner.start_demo(
        "batching",
        ["oneslot", "batched"],
        options={"levels": "1,2,4", "max_tokens": 8},
        background=False,
    )
    result = runner.demo_result(run_id)
    assert result["status"] == "finished", (result["error"], [s["errors"] for s in result["steps"]])
    batched, single = result["verdicts"]["batched"], result["verdicts"]["oneslot"]
    assert batched["verdict"] == "pays"
    assert batched["gain"] == pytest.approx(4, rel=0.25)
    assert batched["parallel_peak"] == pytest.approx(4, rel=0.15)
    assert single["verdict"] == "serial"
    assert single["parallel_peak"] < 1.2
    assert single["gain"] == pytest.approx(1, abs=0.2)
    assert single["latency_growth"] > 1.8  # the fourth request waited for three before it
    # One chart for the scenario, growing one curve per engine.
    last_chart = result["steps"][-1]
    assert last_chart["key"] == "ramp:batched"
    assert "oneslot: served one request at a time" in result["conclusion"]
    assert result["conclusion"].startswith("Batching multiplied throughput ×")


def _levels(*points: tuple[int, float, float, float]) -> list[dict]:
    return [
        {"concurrency": c, "throughput_tok_s": t, "e2e_mean_s": e, "parallel": p}
        for c, t, e, p in points
    ]


def test_ramp_verdict_thresholds() -> None:
    saturating = ramp_verdict(
        _levels((1, 20, 1.0, 1), (2, 39, 1.0, 2), (4, 70, 1.1, 4), (8, 76, 2.0, 4), (16, 77, 4.0, 4))
    )
    assert saturating.verdict == "pays" and saturating.saturation_concurrency == 4
    assert saturating.peak_concurrency == 16 and saturating.latency_growth == pytest.approx(4)
    assert ramp_verdict(_levels((1, 20, 1, 1), (4, 21, 4, 1.05))).verdict == "serial"
    # Decoding together on a saturated machine: batching happened, throughput did not follow.
    assert ramp_verdict(_levels((1, 20, 1, 1), (4, 21, 4, 3.9))).verdict == "batched_no_gain"
    assert ramp_verdict(_levels((1, 20, 1, 1), (4, 26, 3, 3.9))).verdict == "little"
    assert ramp_verdict([{"concurrency": 1, "error": "connect_refused: x"}]).verdict == "failed"


def test_the_headline_never_contradicts_a_small_gain() -> None:
    """Seen on the local engines: "No engine in this run gained throughput" above a line saying
    llamacpp-4slot gained ×1.5."""
    from services.demos.batching import ContinuousBatching

    little = {
        "verdict": "little",
        "gain": 1.5,
        "first_tok_s": 53.3,
        "peak_tok_s": 77.5,
        "peak_concurrency": 8,
        "parallel_peak": 4.0,
    }
    serial = {
        "verdict": "serial",
        "gain": 1.0,
        "first_tok_s": 42.9,
        "peak_tok_s": 42.9,
        "peak_concurrency": 1,
        "parallel_peak": 1.0,
    }
    steps = [
        {"key": "ramp:a", "data": {"verdict": little}},
        {"key": "ramp:b", "data": {"verdict": serial}},
    ]
    conclusion = ContinuousBatching().conclude(steps, ["a", "b"], {})
    assert conclusion.headline.startswith("Parallel requests gained little here: ×1.5 at best, on a")
