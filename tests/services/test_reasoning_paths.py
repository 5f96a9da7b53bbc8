"""A reasoning model's stream, one set of answer timings on every path (issue 32, part 2).

The scripted server streams known thinking (`reasoning_content` / `reasoning` deltas) and then
the answer; the client records it once and the Playground, a benchmark and a demo step get that
recording (test_measure_paths' replay), so their time to first answer token, reasoning and
answer tokens and rates must be identical and equal to services/core/measure.py's definitions. A
benchmark job then runs against the live scripted stream, and its stored run is read back the
ways a person reads it: the run summary, the SLOs, the comparison, the CSV export, the CLI table.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from sqlalchemy import select

from db.models import Exchange, RequestResult
from db.session import session_scope
from services import playground
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.jobs.writer import record_from_row, request_row
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.stats import SloSpec, meets_slo, summarize_engine
from services.bench.workloads import WorkloadSpec
from services.client import StreamResult
from services.core.measure import RequestMetrics
from services.playground import view as playground_view
from tests.services.core.test_measure_paths import (
    record_stream,
    replaying,
    through_a_benchmark,
    through_a_demo_step,
    through_the_playground,
)
from tests.support.scripted_server import ScriptedServer

#: 5 thinking tokens, then 7 answer tokens, 4 ms apart after a 30 ms first token.
THINKING = {"ttft": 30, "itl": 4, "think": 5, "tokens": 7}
ANSWER_KEYS = (
    "ttfat_s",
    "reasoning_tokens",
    "reasoning_tokens_source",
    "answer_tokens",
    "ttft_includes_reasoning",
)


def _answer_timing(figures: RequestMetrics) -> dict[str, Any]:
    return {key: getattr(figures, key) for key in ANSWER_KEYS}


def _check_definitions(recorded: StreamResult, expected: RequestMetrics, source: str) -> None:
    """The figures are services/core/measure.py's definitions on the scripted stream."""
    assert recorded.reasoning_text == " red fox sky sea sun"
    assert recorded.text == " oak elm ash ivy bay cod jay"  # the answer alone
    assert recorded.choices[0].reasoning == [0, 1, 2, 3, 4]
    assert (expected.output_tokens, expected.reasoning_tokens, expected.answer_tokens) == (12, 5, 7)
    assert expected.reasoning_tokens_source == source
    assert expected.ttft_includes_reasoning
    # TTFT is the first thinking token, TTFAT the sixth chunk (the first answer one).
    assert expected.ttft_s == expected.chunk_times_s[0] and expected.ttft_s >= 0.030
    assert expected.ttfat_s == expected.chunk_times_s[5]
    # Five token steps of 4 ms between them on the server's clock (loopback: within a few ms).
    assert expected.ttfat_s - expected.ttft_s == pytest.approx(0.020, abs=0.010)
    assert expected.reasoning_tok_s == 5 / (expected.ttfat_s - expected.ttft_s)
    assert expected.answer_tok_s == 6 / (expected.e2e_s - expected.ttfat_s)
    # ITL and TPOT stay over every output token, thinking included.
    assert len(expected.itl_s) == 11
    assert expected.tpot_s == pytest.approx((expected.e2e_s - expected.ttft_s) / 11, abs=1e-12)


@pytest.mark.parametrize(
    ("extra", "source"),
    [({}, "usage"), ({"rkey": "reasoning"}, "usage"), ({"rusage": 0}, "stream")],
    ids=["reasoning_content with the engine's count", "reasoning (current vLLM)", "no usage detail"],
)
def test_playground_benchmark_and_demo_give_identical_answer_timing(
    db_url: str,
    scripted_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    extra: dict[str, Any],
    source: str,
) -> None:
    recorded = record_stream(scripted_server, {**THINKING, **extra})
    expected = recorded.metrics()
    _check_definitions(recorded, expected, source)
    reference = _answer_timing(expected)

    replay = replaying(recorded)
    for module in (
        "services.playground.worker",
        "services.bench.load.engine_load",
        "services.client.running",
    ):
        monkeypatch.setattr(f"{module}.stream_chat", replay)

    # The Playground: the stored exchange, the column the page draws, the thinking apart.
    through_the_playground(scripted_server)
    with session_scope() as session:
        row = session.scalars(
            select(Exchange).where(Exchange.engine_name == "left").order_by(Exchange.id.desc())
        ).first()
        assert row is not None
        stored, run_id = dict(row.metrics or {}), row.run_id
    assert {key: stored[key] for key in ANSWER_KEYS} == reference
    assert stored["reasoning_tok_s"] == expected.reasoning_tok_s
    assert stored["answer_tok_s"] == expected.answer_tok_s
    column = next(c for c in playground.get_exchange(run_id).columns if c.engine == "left")
    assert (column.answer, column.thinking) == (recorded.text, recorded.reasoning_text)
    assert (column.ttfat_s, column.reasoning_tokens, column.answer_tokens) == (
        expected.ttfat_s,
        5,
        7,
    )
    title = playground_view.thinking_title(column)
    assert title is not None and "5 tokens" in title and "answer 7 tokens" in title
    assert "first" in playground_view.figures(column, playground_view.units([column]))

    # A benchmark's record, stored as a row and read back.
    figures = through_a_benchmark(scripted_server)
    assert figures["ttft_s"] == expected.ttft_s
    record = _last_benchmark_record(scripted_server)
    assert (
        record.ttfat_s,
        record.reasoning_tokens,
        record.reasoning_source,
        record.answer_tokens,
        record.ttft_includes_reasoning,
    ) == tuple(reference.values())
    row_back = record_from_row(request_row(1, record))
    assert row_back == record
    block = summarize_engine([record])
    assert block["ttfat_s"]["p50"] == expected.ttfat_s
    assert (block["reasoning_tokens"], block["answer_tokens"]) == (5, 7)
    assert block["reasoning_tokens_source"] == source and block["ttft_includes_reasoning"] is True
    assert block["reasoning_tok_s"]["p50"] == expected.reasoning_tok_s
    assert block["answer_tok_s"]["p50"] == expected.answer_tok_s

    # An SLO on TTFT or on time to first answer: a limit between the two tells them apart.
    between = (expected.ttft_s + expected.ttfat_s) / 2 * 1000
    assert meets_slo(record, SloSpec(ttft_ms=between))
    assert not meets_slo(record, SloSpec(ttfat_ms=between))
    assert meets_slo(record, SloSpec(ttfat_ms=expected.ttfat_s * 1000 + 1))

    # A demo step's stored row.
    through_a_demo_step(scripted_server)
    with session_scope() as session:
        demo_extra = session.scalars(
            select(RequestResult.extra).order_by(RequestResult.id.desc())
        ).first()
    assert demo_extra is not None
    assert demo_extra["ttfat_s"] == expected.ttfat_s
    assert demo_extra["reasoning_tokens"] == 5 and demo_extra["reasoning_source"] == source
    assert demo_extra["ttft_includes_reasoning"] is True


def _last_benchmark_record(server: ScriptedServer) -> Any:
    """The benchmark path's record itself (through_a_benchmark returns only the shared figures)."""
    from services.bench.runner import execute_load

    outcome = execute_load(
        EngineTarget(name="bench", base_url=server.base_url, kind="vllm", model=server.model()),
        WorkloadSpec(input_len=8, output_len=64),
        LoadSpec(concurrency=1, requests=1),
        connect_ahead=False,
    )
    [record] = outcome.measured
    return record


def test_a_model_that_does_not_think_has_ttfat_equal_to_ttft(scripted_server: ScriptedServer) -> None:
    recorded = record_stream(scripted_server, {"ttft": 30, "itl": 4, "tokens": 6})
    figures = recorded.metrics()
    assert figures.ttfat_s == figures.ttft_s and not figures.ttft_includes_reasoning
    assert (figures.reasoning_tokens, figures.answer_tokens) == (0, 6)
    assert recorded.reasoning_text == "" and recorded.choices[0].reasoning == []


def test_a_stored_benchmark_says_its_ttft_includes_thinking(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    """A live run of a thinking engine beside one that answers at once: the run summary, the
    comparison, the CSV export and the CLI table all say which TTFT includes thinking."""
    thinking = EngineTarget(
        name="thinker",
        base_url=scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=10, itl=2, think=6, tokens=10),
    )
    plain = EngineTarget(
        name="plain",
        base_url=scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=10, itl=2, tokens=10),
    )
    spec = BenchSpec(
        engines=(thinking, plain),
        workload=WorkloadSpec(input_len=8, output_len=64),
        load=LoadSpec(concurrency=2, requests=6),
        slo=SloSpec(ttfat_ms=10_000),
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    assert summary["ttft_includes_reasoning"] is True
    thinker, answered = summary["engines"]["thinker"], summary["engines"]["plain"]
    assert thinker["ttft_includes_reasoning"] is True and answered["ttft_includes_reasoning"] is False
    assert (thinker["reasoning_tokens"], thinker["answer_tokens"]) == (36, 60)
    assert thinker["reasoning_tokens_source"] == "usage"
    assert (answered["reasoning_tokens"], answered["answer_tokens"]) == (0, 60)
    assert answered["ttfat_s"] == answered["ttft_s"]
    assert thinker["ttfat_s"]["p50"] > thinker["ttft_s"]["p50"]
    assert thinker["slo_attainment"] == 1.0  # the SLO on time to first answer, met by all

    # The stored rows give the summary's figures back.
    records = [r for r in jobs.stored_records(run_id) if r.engine == "thinker"]
    assert all(r.ttft_includes_reasoning and r.reasoning_tokens == 6 for r in records)
    assert summarize_engine(records)["ttfat_s"] == thinker["ttfat_s"]

    # The Benchmarks page: a time-to-first-answer row and CDF beside TTFT's, reasoning columns.
    from services.bench.view.run_view import run_view

    view = run_view(run_id)
    assert "ttfat_cdf" in view.figures
    rows = view.table[view.table["metric"] == "time to first answer token"]
    assert list(rows["engine"]) == ["thinker"]
    assert view.throughput.set_index("engine").loc["thinker", "reasoning tokens"] == 36

    # The comparison shows time to first answer beside TTFT, and says which engine thinks.
    from services.runs import compare_runs

    comparison = compare_runs([run_id])
    flags = {s.engine: s.ttft_includes_reasoning for s in comparison.series}
    assert flags == {"thinker": True, "plain": False}
    rows = {(row.metric, row.stat): row for row in comparison.rows}
    ttfat = rows[("ttfat_s", "p50")]
    order = [s.engine for s in comparison.series]
    assert ttfat.values[order.index("thinker")] == pytest.approx(thinker["ttfat_s"]["p50"])

    # The CSV export carries each request's answer timing (in its extra column).
    from services.runs.reports.streamed import stream_run

    text = b"".join(stream_run(run_id, "csv").chunks).decode()
    exported = [r for r in csv.DictReader(io.StringIO(text)) if r["engine_name"] == "thinker"]
    assert exported and all(json.loads(r["extra"])["reasoning_tokens"] == 6 for r in exported)

    # The CLI table: one line for the engine that thinks, none for the other.
    from commands.bench import _table

    table = _table({"run_id": run_id, "status": "finished", **summary})
    assert table.count("TTFT includes thinking") == 1
