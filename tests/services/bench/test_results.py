"""An engine's results are one typed record (issue 57): every figure summarize_engine writes is a
field, a stored block reads back to the same JSON, and an old, imported or odd block reads as
None where it lacks a figure, never raising."""

from __future__ import annotations

import math

from services.bench.results import Distribution, EngineResults
from services.bench.stats import RequestRecord, summarize_engine
from services.bench.summary import BenchSummary


def _records() -> list[RequestRecord]:
    return [
        RequestRecord(
            engine="e",
            index=i,
            ok=True,
            start_s=float(i),
            ttft_s=0.1 + i / 100,
            e2e_s=1.0,
            input_tokens=10,
            output_tokens=20,
            itl_s=[0.05] * 19,
        )
        for i in range(5)
    ]


def test_every_figure_summarize_engine_writes_is_a_field() -> None:
    block = summarize_engine(_records())
    results = EngineResults.from_json(block)
    # A figure added to summarize_engine without a field would land in `extra`, unseen by mypy.
    assert results.extra == {}
    assert results.to_json() == block
    assert results.completed == 5 and results.output_tokens == 100
    assert isinstance(results.ttft_s, Distribution)
    assert results.ttft_s.p50 == block["ttft_s"]["p50"] and results.ttft_s.max == 0.14
    assert results.queue_s is None  # nobody waited in the engine's queue


def test_a_summary_reads_its_blocks_and_rows_as_records_and_writes_them_back() -> None:
    block = summarize_engine(_records())
    stored = {
        "engines": {"e": {**block, "from_step": 1, "findings": []}},
        "sweep": [
            {"engine": "e", "step": 0, "concurrency": 1, "phase": "sweep", **block},
            {"engine": "e", "step": 1, "concurrency": 4, "phase": "sweep", **block},
        ],
    }
    summary = BenchSummary.from_json(stored)
    assert summary.to_json() == stored
    reported = summary.reported_step("e")
    assert reported is not None and reported.concurrency == 4 and isinstance(reported.concurrency, int)
    assert summary.step_labels() == {0: "concurrency 1", 1: "concurrency 4"}
    assert summary.sweep_dimension == "concurrency"


def test_an_imported_or_odd_block_reads_none_where_it_lacks_a_figure() -> None:
    odd = {
        "completed": "12",
        "output_throughput_tok_s": math.nan,
        "ttft_s": {"mean": 0.2, "p99": "fast"},
        "e2e_s": [1, 2],
        "tool_specific": {"x": 1},
    }
    results = EngineResults.from_json(odd)
    assert results.completed == 0 and results.output_throughput_tok_s is None
    assert results.ttft_s is not None and results.ttft_s.mean == 0.2 and results.ttft_s.p99 is None
    assert results.e2e_s is None and results.itl_s is None
    assert results.extra == {"tool_specific": {"x": 1}}
    nothing = EngineResults.from_json(None)
    assert nothing.to_json() == {} and nothing.completed == 0 and nothing.ttft_s is None
    # Stored JSON comes back as it was: an import's block without a figure does not gain one.
    assert results.to_json() == odd | {"completed": 0, "output_throughput_tok_s": None, "e2e_s": None}


def test_the_record_is_also_the_mapping_of_its_stored_json() -> None:
    block = summarize_engine(_records())
    results = EngineResults.from_json(block)
    assert dict(results) == block and results == block
    assert results["ttft_s"] == block["ttft_s"] and results.get("nothing") is None
    assert EngineResults.from_json(results) is results


def test_a_percentile_a_run_asked_for_is_read_by_its_name() -> None:
    block = summarize_engine(_records(), percentiles=(99.9,))
    results = EngineResults.from_json(block)
    assert results.ttft_s is not None and results.ttft_s.at("p99.9") == block["ttft_s"]["p99.9"]
    assert results.latency("ttft_s") is results.ttft_s and results.latency("completed") is None
