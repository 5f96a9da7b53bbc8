"""SGLang bench_serving JSONL: Infinity rates, E2E from TTFT and chunk gaps."""

from __future__ import annotations

import pytest

from services import importers
from services.importers import sglang


def test_result_line_with_details(samples) -> None:
    module, [run] = importers.parse_file(
        (samples / "sglang_bench_serving.jsonl").read_bytes(), "s.jsonl"
    )
    assert module is sglang
    assert run.engine_names == "sglang-oai-chat" and run.workload == "random"
    assert run.config["request_rate"] == "inf" and run.config["max_concurrency"] == 4
    engine = run.summary["engines"]["sglang-oai-chat"]
    assert engine["completed"] == 3 and engine["failed"] == 1  # failures counted from the errors list
    assert engine["e2e_s"]["p50"] == pytest.approx(0.4) and engine["ttft_s"]["mean"] == pytest.approx(
        0.1333
    )
    assert engine["itl_s"]["p95"] == pytest.approx(0.1)
    assert engine["input_throughput_tok_s"] == 512.0 and engine["engine_metrics"]["concurrency"] == 2.6
    ok, failed = run.requests[2], run.requests[3]
    assert ok["e2e_s"] == pytest.approx(0.5) and ok["tpot_s"] == pytest.approx(0.1)
    assert not failed["ok"] and failed["error"] == "Service Unavailable"


def test_not_mistaken_for_vllm(samples) -> None:
    source = importers.read_source((samples / "sglang_bench_serving.jsonl").read_bytes(), "s.jsonl")
    assert not importers.vllm.sniff(source) and sglang.sniff(source)
