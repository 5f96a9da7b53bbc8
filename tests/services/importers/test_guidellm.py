"""GuideLLM benchmarks.json: one run, a sweep step per benchmark, sampled requests."""

from __future__ import annotations

import pytest

from services import importers
from services.importers import guidellm


def test_sweep_report(samples) -> None:
    module, [run] = importers.parse_file((samples / "guidellm_benchmarks.json").read_bytes(), "benchmarks.json")
    assert module is guidellm
    assert run.engine_names == "127.0.0.1:8000" and run.model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    steps = run.summary["sweep"]
    assert [(s.get("strategy"), s.get("concurrency"), s.get("rate")) for s in steps] == [
        ("synchronous", 1, None), ("constant", None, 2.0)]
    assert steps[0]["ttft_s"]["mean"] == pytest.approx(0.1) and steps[0]["completed"] == 3
    headline = run.summary["engines"]["127.0.0.1:8000"]  # the last benchmark
    assert headline["ttft_s"]["p50"] == pytest.approx(0.2) and headline["e2e_s"]["max"] == pytest.approx(0.7)
    assert headline["tpot_s"]["mean"] == pytest.approx(0.15)  # GuideLLM's inter_token_latency_ms
    assert "itl_s" not in headline  # GuideLLM has no chunk gaps
    assert (headline["completed"], headline["failed"]) == (3, 1)
    assert headline["errors_by_class"] == {"errored": 1}
    assert headline["output_throughput_tok_s"] == pytest.approx(6.0) and headline["output_tokens"] == 12
    assert headline["engine_metrics"]["guidellm_time_per_output_token_incl_first_ms"] == pytest.approx(162.5)
    assert len(run.requests) == 7
    failed = run.requests[-1]
    assert not failed["ok"] and failed["error"] == "HTTP 503: Service Unavailable" and failed["extra"]["step"] == 1
    assert run.requests[3]["start_s"] == pytest.approx(0.0) and run.requests[4]["ttft_s"] == pytest.approx(0.25)
    assert run.status == "finished_with_errors"
