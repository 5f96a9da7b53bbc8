"""Where a benchmark's time went: the engine's own times stored with each request, the
summary's `time_split` block, and its rest as the self-check's evidence."""

from __future__ import annotations

import pytest

from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.blocks import GeneratorBlock, LagFigures
from services.bench.jobs.writer import record_from_row, request_row
from services.bench.results import TimeSplitBlock
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.stats import RequestRecord, split_block
from services.bench.time_split import (
    MIN_TIMED_REQUESTS,
    REST_P99_LIMIT_S,
    add_rest_evidence,
    rest_evidence,
)
from services.bench.workloads import WorkloadSpec
from services.core.measure import EngineTimes
from tests.support.scripted_server import ScriptedServer


def record(
    index: int, *, e2e: float = 0.3, rest: float = 0.002, queue: float | None = 0.001
) -> RequestRecord:
    engine = EngineTimes(queue_s=queue, prefill_s=0.02, decode_s=e2e - 0.02 - (queue or 0) - rest)
    return RequestRecord(
        engine="e",
        index=index,
        ok=True,
        start_s=float(index),
        ttft_s=0.03,
        e2e_s=e2e,
        output_tokens=10,
        engine_times=engine,
    )


def split(records: list[RequestRecord]) -> TimeSplitBlock:
    """The stored block of these requests' split, read back."""
    return TimeSplitBlock.from_json(split_block(records))


def test_a_record_keeps_its_engine_times_through_the_database_row() -> None:
    original = record(3)
    row = request_row(1, original)
    assert row["extra"]["engine_times"]["prefill_s"] == 0.02
    back = record_from_row({**row, "engine_name": "e"})
    assert back.engine_times == original.engine_times
    assert back.time_split == original.time_split
    assert (
        record_from_row({**request_row(1, RequestRecord("e", 1, True)), "engine_name": "e"}).engine_times
        is None
    )


def test_the_blocks_means_add_up_to_the_mean_e2e() -> None:
    records = [record(i, e2e=0.2 + i / 100, rest=0.001 * i) for i in range(10)]
    block = split_block(records)
    assert (block["requests"], block["reported"], block["queue_reported"]) == (10, 10, True)
    means = sum(block[key]["mean"] for key in ("queue_s", "prefill_s", "decode_s", "e2e_rest_s"))
    assert means == pytest.approx(block["e2e_s"]["mean"], abs=1e-12)
    assert block["e2e_rest_s"]["max"] == pytest.approx(0.009)


def test_an_engine_that_reports_nothing_has_a_block_that_says_so() -> None:
    plain = RequestRecord("e", 1, True, ttft_s=0.1, e2e_s=0.2)
    assert split_block([plain]) == {"requests": 1, "reported": 0}


def test_a_large_rest_is_evidence_with_its_figure_and_a_small_one_is_not() -> None:
    count = MIN_TIMED_REQUESTS
    calm = split([record(i) for i in range(count)])
    assert rest_evidence(calm, GeneratorBlock(client_bound=False)) is None
    slow = [record(i, rest=0.002 if i < count - 2 else REST_P99_LIMIT_S * 4) for i in range(count)]
    generator = GeneratorBlock(client_bound=False, evidence=[], loop_lag_ms=LagFigures(p99=0.3))
    add_rest_evidence(generator, split(slow))
    # Evidence beside the verdict, with its figure and whose it likely is; never the verdict.
    assert generator["client_bound"] is False and generator["evidence"] == []
    words = generator["rest_evidence"]
    assert words.startswith("time outside the engine's own clock p99 ")
    assert "likely the engine's front end (tokenizing, detokenizing, its HTTP server)" in words
    assert "not the generator (its own delay was 0.300 ms at p99)" in words
    # Too few requests, or an engine that does not time its queue (the slot wait is its own).
    assert rest_evidence(split(slow[: count - 1]), None) is None
    untimed = [record(i, rest=0.002 if i < count - 2 else 0.1, queue=None) for i in range(count)]
    assert rest_evidence(split(untimed), None) is None


def test_a_run_stores_the_split_of_an_engine_that_reports_it(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    def target(name: str, **scenario: object) -> EngineTarget:
        return EngineTarget(
            name=name,
            base_url=scripted_server.base_url,
            kind="vllm",
            model=scripted_server.model(ttft=10, itl=2, tokens=8, **scenario),
        )

    spec = BenchSpec(
        engines=(target("timed", report="vllm", etimes="1:8:14"), target("silent")),
        workload=WorkloadSpec(input_len=8, output_len=8),
        load=LoadSpec(concurrency=2, requests=6, warmup_requests=1),
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    timed = summary["engines"]["timed"]["time_split"]
    assert (timed["requests"], timed["reported"], timed["source"]) == (6, 6, "metrics")
    assert timed["queue_s"]["p50"] == pytest.approx(0.001)
    assert timed["prefill_s"]["p50"] == pytest.approx(0.008)
    assert timed["decode_s"]["p50"] == pytest.approx(0.014)
    assert summary["engines"]["silent"]["time_split"] == {"requests": 6, "reported": 0}
    stored = [r for r in jobs.load_records(run_id) if r.engine == "timed" and not r.warmup]
    for one in stored:
        split = one.time_split
        assert split is not None and one.e2e_s is not None
        assert split.e2e_rest_s == pytest.approx(one.e2e_s - 0.023, abs=1e-12)


def test_the_page_shows_the_split_per_engine_and_says_who_reported_nothing() -> None:
    from services.bench.view.split import request_words, split_figure, split_lines, split_table

    timed = [record(i) for i in range(4)]
    summary = {
        "engines": {
            "vllm-cpu": {"completed": 4, "time_split": split_block(timed)},
            "sglang-cpu": {"completed": 4, "time_split": {"requests": 4, "reported": 0}},
        }
    }
    labels = {"vllm-cpu": "vLLM", "sglang-cpu": "SGLang"}
    figure = split_figure(summary, labels)
    assert figure is not None
    assert [trace.name for trace in figure.data] == [
        "queue (engine)",
        "prefill (engine)",
        "decode (engine)",
        "rest: network, HTTP, front end, client",
    ]
    stacked = sum(trace.x[0] for trace in figure.data)
    assert stacked == pytest.approx(300.0)
    assert [a.text for a in figure.layout.annotations] == ["not reported by SGLang"]
    lines = split_lines(summary, labels)
    assert lines[0].startswith("vllm-cpu: mean E2E 300.0 ms = queue 1.0 + prefill 20.0 + decode 277.0")
    assert lines[1] == "sglang-cpu: where the time went: not reported by SGLang"
    assert set(split_table(summary)["engine"]) == {"vllm-cpu"}
    assert request_words(timed[0]).startswith("queue 1.0 ms · prefill 20.0 ms · decode 277 ms")
    assert request_words(RequestRecord("e", 1, True)) == "engine times not reported"
    assert split_figure({"engines": {"sglang-cpu": summary["engines"]["sglang-cpu"]}}, labels) is None


def test_tgi_shows_prefill_and_decode_as_one_part() -> None:
    from services.bench.view.split import split_figure

    tgi = [
        RequestRecord(
            "tgi",
            i,
            True,
            ttft_s=0.05,
            e2e_s=0.3,
            engine_times=EngineTimes(queue_s=0.01, inference_s=0.28),
        )
        for i in range(3)
    ]
    figure = split_figure({"engines": {"tgi": {"completed": 3, "time_split": split_block(tgi)}}}, {})
    assert figure is not None
    parts = {trace.name: trace.x[0] for trace in figure.data}
    assert parts == pytest.approx(
        {
            "queue (engine)": 10.0,
            "prefill + decode (engine, not apart)": 280.0,
            "rest: network, HTTP, front end, client": 10.0,
        }
    )
