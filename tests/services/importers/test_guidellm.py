"""GuideLLM benchmarks.json: one run, a sweep step per benchmark, sampled requests."""

from __future__ import annotations

import pytest

from services import importers
from services.importers import guidellm


def test_sweep_report(samples) -> None:
    module, [run] = importers.parse_file(
        (samples / "guidellm_benchmarks.json").read_bytes(), "benchmarks.json"
    )
    assert module is guidellm
    assert run.engine_names == "127.0.0.1:8000" and run.model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    steps = run.summary["sweep"]
    assert [(s.get("strategy"), s.get("concurrency"), s.get("rate")) for s in steps] == [
        ("synchronous", 1, None),
        ("constant", None, 2.0),
    ]
    assert steps[0]["ttft_s"]["mean"] == pytest.approx(0.1) and steps[0]["completed"] == 3
    constant = steps[1]
    assert constant["ttft_s"]["p50"] == pytest.approx(0.2) and constant["e2e_s"]["max"] == pytest.approx(
        0.7
    )
    assert constant["tpot_s"]["mean"] == pytest.approx(0.15)  # GuideLLM's inter_token_latency_ms
    assert constant["itl_s"] is None  # GuideLLM has no chunk gaps
    assert (constant["completed"], constant["failed"]) == (3, 1)
    assert constant["errors_by_class"] == {"errored": 1}
    assert constant["output_throughput_tok_s"] == pytest.approx(6.0) and constant["output_tokens"] == 12
    assert constant["engine_metrics"]["guidellm_time_per_output_token_incl_first_ms"] == pytest.approx(
        162.5
    )
    # The headline is the step with the highest request rate (2.5/s synchronous vs 1.5/s), as for our sweeps.
    headline = run.summary["engines"]["127.0.0.1:8000"]
    assert headline["from_step"] == 0 and headline["request_throughput_rps"] == pytest.approx(2.5)
    assert headline["ttft_s"]["p50"] == pytest.approx(0.1) and "strategy" not in headline
    assert len(run.requests) == 7
    failed = run.requests[-1]
    assert (
        not failed["ok"]
        and failed["error"] == "HTTP 503: Service Unavailable"
        and failed["extra"]["step"] == 1
    )
    assert run.requests[3]["start_s"] == pytest.approx(0.0) and run.requests[4][
        "ttft_s"
    ] == pytest.approx(0.25)
    assert run.status == "finished_with_errors"


def test_first_output_token_of_a_reasoning_model(samples) -> None:
    """GuideLLM's time_to_first_output_token_ms is our time to first answer token; it counts no
    reasoning tokens apart, so those (and the answer's) are unknown, not 0."""
    module, [run] = importers.parse_file(
        (samples / "guidellm_reasoning_benchmarks.json").read_bytes(), "benchmarks.json"
    )
    assert module is guidellm
    first, _second = run.requests
    assert first["ttft_s"] == pytest.approx(0.1) and first["extra"]["ttfat_s"] == pytest.approx(0.4)
    assert first["extra"]["ttft_includes_reasoning"] and "reasoning_tokens" not in first["extra"]
    engine = run.summary["engines"]["127.0.0.1:8000"]
    assert engine["ttfat_s"]["mean"] == pytest.approx(0.45) and engine["ttft_s"][
        "mean"
    ] == pytest.approx(0.15)
    assert engine["ttft_includes_reasoning"] is True
    assert engine["reasoning_tokens"] is None and engine["answer_tokens"] is None
    assert engine["answer_tok_s"]["p50"] is None
