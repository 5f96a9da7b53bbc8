"""vllm bench serve result JSON: summary in seconds, per-request rows, sweeps."""

from __future__ import annotations

import pytest

from services import importers, runs
from services.importers import vllm


def test_detailed_result(samples) -> None:
    module, [run] = importers.parse_file(
        (samples / "vllm_bench_serve_detailed.json").read_bytes(), "r.json"
    )
    assert module is vllm
    assert run.kind == "import" and run.status == "finished_with_errors"
    assert run.model == "HuggingFaceTB/SmolLM2-135M-Instruct" and run.workload == "random"
    assert run.engine_names == "openai-chat"
    engine = run.summary["engines"]["openai-chat"]
    assert (engine["completed"], engine["failed"], engine["sent"]) == (3, 1, 4)
    assert engine["ttft_s"]["mean"] == pytest.approx(0.2) and engine["ttft_s"]["p99"] == pytest.approx(
        0.298
    )
    assert engine["e2e_s"]["p50"] == pytest.approx(0.36)
    # vLLM wrote only mean/median/std/p99; p90, min and max come from its per-request arrays.
    assert engine["ttft_s"]["p90"] == pytest.approx(0.28) and engine["ttft_s"]["max"] == pytest.approx(
        0.3
    )
    assert engine["output_throughput_tok_s"] == 6.0 and engine["request_throughput_rps"] == 1.5
    assert engine["input_throughput_tok_s"] == pytest.approx(384 / 2.0)
    assert engine["engine_metrics"]["max_concurrent_requests"] == 2
    assert run.config["max_concurrency"] == 2 and run.config["request_rate"] == "inf"
    assert run.config["metadata"] == {"dataset_name": "random"}
    assert run.created_at.isoformat() == "2026-11-28T10:15:00+00:00"

    assert len(run.requests) == 4
    first, failed = run.requests[0], run.requests[3]
    assert (
        first["ok"]
        and first["ttft_s"] == 0.1
        and first["e2e_s"] == 0.25
        and first["itl_s"] == [0.05] * 3
    )
    assert (
        first["tpot_s"] == pytest.approx(0.05)
        and first["output_tokens"] == 4
        and first["input_tokens"] == 128
    )
    assert (
        run.requests[2]["start_s"] == pytest.approx(0.4)
        and run.requests[2]["extra"]["client_queue_s"] == 0.25
    )
    assert (
        not failed["ok"]
        and failed["error"] == "Bad Request: prompt too long"
        and failed["ttft_s"] is None
    )


def test_appended_results_become_a_sweep(samples) -> None:
    _, [run] = importers.parse_file(
        (samples / "vllm_bench_serve_append.jsonl").read_bytes(), "sweep.jsonl"
    )
    assert run.engine_names == "vllm-cpu"  # the --label
    steps = run.summary["sweep"]
    assert [(s["engine"], s["rate"]) for s in steps] == [("vllm-cpu", 1.0), ("vllm-cpu", 4.0)]
    assert steps[0]["ttft_s"]["p50"] == pytest.approx(0.038)
    headline = run.summary["engines"]["vllm-cpu"]  # the step with the highest request rate
    assert (
        headline["from_step"] == 1
        and headline["ttft_s"]["p50"] == pytest.approx(0.095)
        and headline["failed"] == 1
    )
    assert run.config["request_rate"] == [1.0, 4.0]
    assert [row["extra"]["step"] for row in run.requests] == [0, 0, 0, 1, 1, 1]
    # Without --save-detailed only latencies are per request; a 0.0 latency is a failure.
    assert [row["ok"] for row in run.requests[3:]] == [True, True, False]
    assert run.requests[0]["e2e_s"] == 0.8 and run.requests[0]["ttft_s"] is None


def test_engine_name_override_and_storage(db_url: str, samples) -> None:
    result = importers.import_file(
        samples / "vllm_bench_serve_detailed.json", engine_name="vllm-h200", tags=["imported"]
    )
    detail = runs.get_run(result.run_ids[0])
    assert (
        detail.engine_names == ("vllm-h200",)
        and detail.tags == ("imported",)
        and detail.request_count == 4
    )
    series = runs.compare_runs(result.run_ids).series[0]
    assert series.samples["ttft_s"].tolist() == [0.1, 0.2, 0.3]
