"""An engine's results are one typed record (issue 57): every figure summarize_engine writes is a
field, a stored block reads back to the same JSON, and an old, imported or odd block reads as
None where it lacks a figure, never raising."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import pytest

from services.bench.results import Distribution, EngineResults, TimeSplitBlock
from services.bench.stats import RequestRecord, summarize_engine
from services.bench.summary import BenchSummary
from services.core.measure import EngineTimes


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


def test_the_record_is_no_mapping_a_figure_is_read_from_its_field() -> None:
    block = summarize_engine(_records())
    results = EngineResults.from_json(block)
    # Indexing by a figure's stored name is gone: a reader takes the field (issue 57).
    assert not isinstance(results, Mapping)
    with pytest.raises(TypeError):
        results["ttft_s"]  # type: ignore[index]
    assert results == EngineResults.from_json(block) and results.to_json() == block
    assert EngineResults.from_json(results) is results
    # A summary built from records already read keeps them (never drops them as non-objects).
    summary = BenchSummary.from_json({"engines": {"e": results}, "sweep": [results]})
    assert summary.engines["e"] is results and summary.sweep == [results]


def test_the_time_split_is_a_record_that_writes_back_what_was_stored() -> None:
    records = [
        RequestRecord(
            engine="e",
            index=i,
            ok=True,
            start_s=float(i),
            ttft_s=0.2,
            e2e_s=1.0,
            output_tokens=20,
            engine_times=EngineTimes(queue_s=None, prefill_s=0.1, decode_s=0.7, source="timings"),
        )
        for i in range(5)
    ]
    block = summarize_engine(records)
    split = EngineResults.from_json(block).time_split
    assert isinstance(split, TimeSplitBlock)
    assert (split.requests, split.timed, split.source, split.queue_reported) == (5, 5, "timings", False)
    assert split.queue_s is None and split.prefill_s is not None and split.prefill_s.mean == 0.1
    assert split.part("e2e_rest_s") is split.e2e_rest_s and split.part("completed") is None
    # Byte for byte as stored: keys, their order and the null part.
    stored = json.dumps(block["time_split"])
    assert json.dumps(EngineResults.from_json(block).to_json()["time_split"]) == stored
    assert json.dumps(split.to_json()) == stored
    # A run stored before splits (none), one whose engine timed nothing, an odd import.
    assert EngineResults.from_json({"completed": 1}).time_split.to_json() == {}
    assert "time_split" not in EngineResults.from_json({"completed": 1}).to_json()
    untimed = {"requests": 3, "reported": 0}
    assert TimeSplitBlock.from_json(untimed).to_json() == untimed
    odd = {"requests": "3", "e2e_rest_s": [1], "clamped": {"requests": 2, "max_s": 0.04}, "new": 1}
    read = TimeSplitBlock.from_json(odd)
    assert read.requests is None and read.e2e_rest_s is None and read.extra == {"new": 1}
    assert read.clamped is not None and read.clamped.max_s == 0.04
    assert read.to_json() == {**odd, "requests": None, "e2e_rest_s": None}


def test_a_percentile_a_run_asked_for_is_read_by_its_name() -> None:
    block = summarize_engine(_records(), percentiles=(99.9,))
    results = EngineResults.from_json(block)
    assert results.ttft_s is not None and results.ttft_s.at("p99.9") == block["ttft_s"]["p99.9"]
    assert results.latency("ttft_s") is results.ttft_s and results.latency("completed") is None
