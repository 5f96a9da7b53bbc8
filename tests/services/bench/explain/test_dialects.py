"""Issue 54: every evidence path an explanation reads runs against a server whose truth is known.
The scripted server speaks each engine's metric dialect with a real queue behind its slots
(tests/support/scripted_dialects.py); a run against it records the engine's metrics through the
kind's own adapter, as against the engine itself, and a comparison of two runs says why."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services import runs
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.workloads import WorkloadSpec
from services.runs import why
from tests.support.scripted_server import Identity, ScriptedServer

#: 400 ms to the first token and 20 ms a token after it, 12 tokens: 0.62 s a request, so four
#: clients on one slot keep three waiting. Long enough that the client's own few milliseconds of
#: loop lag on a busy 2-core machine stay well inside the self-check's 2% of TTFT.
SCENARIO = {"ttft": 400, "itl": 20, "tokens": 12}
SERVICE_S = (SCENARIO["ttft"] + SCENARIO["itl"] * (SCENARIO["tokens"] - 1)) / 1000
REQUESTS = 12
CONCURRENCY = 4
#: Each dialect's counter of generated tokens, as its adapter reads it.
GENERATED = {
    "vllm": "vllm:generation_tokens",
    "sglang": "sglang:generation_tokens",
    "llamacpp": "llamacpp:tokens_predicted",
}


@contextmanager
def dialect_server(dialect: str, slots: int) -> Iterator[ScriptedServer]:
    with ScriptedServer(identity=Identity(dialect=dialect, slots=slots)) as server:
        yield server


def run_against(server: ScriptedServer, kind: str, name: str, report: str = "") -> int:
    scenario = {**SCENARIO, **({"report": report} if report else {})}
    spec = BenchSpec(
        engines=(
            EngineTarget(
                name=name,
                base_url=server.base_url,
                kind=kind,
                model=server.model(**scenario),
                metrics_url=server.root_url + "/metrics",
            ),
        ),
        workload=WorkloadSpec(input_len=16, output_len=16),
        load=LoadSpec(concurrency=CONCURRENCY, requests=REQUESTS),
    )
    run_id = jobs.create_run(spec)
    jobs.execute_run(run_id)
    return run_id


def stored_block(run_id: int, engine: str) -> dict[str, Any]:
    """One engine's block of a run's stored summary, as the database holds it."""
    with session_scope() as session:
        summary = session.scalars(select(Run.summary).where(Run.id == run_id)).one()
    return dict(summary["engines"][engine])


def server_histogram_mean(server: ScriptedServer, family_name: str) -> float:
    """The mean of one of the server's own histograms (its sum over its count)."""
    text = httpx2.get(server.root_url + "/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        if family.name == family_name:
            total = next(s.value for s in family.samples if s.name.endswith("_sum"))
            count = next(s.value for s in family.samples if s.name.endswith("_count"))
            return total / count
    raise AssertionError(f"{family_name} is not on the server's /metrics")


@pytest.mark.parametrize(
    ("dialect", "report"), [("vllm", "vllm"), ("sglang", ""), ("llamacpp", "llamacpp")]
)
def test_a_real_queue_reads_the_same_in_each_engines_words(
    db_url: str, dialect: str, report: str
) -> None:
    with dialect_server(dialect, slots=1) as server:
        run_id = run_against(server, dialect, f"{dialect}-1slot", report)
        block = stored_block(run_id, f"{dialect}-1slot")
        metrics = block["engine_metrics"]
        # The adapter read the dialect's own names: one running, the other three waiting.
        assert metrics["requests_running_max"] == 1
        assert metrics["requests_waiting_max"] == CONCURRENCY - 1
        assert metrics["requests_waiting_share"] >= 0.5
        assert metrics["generation_tokens_per_s_mean"] > 0
        assert metrics["samples"] >= 4
        split = block.get("time_split") or {}
        # The engine's own counters over the step, read at its first and last instant: exact.
        window = metrics["window"]
        assert window["counters"][GENERATED[dialect]] == REQUESTS * SCENARIO["tokens"]
        if dialect == "sglang":
            # SGLang times no request on a streamed chat: its split is its histograms' totals
            # over the step, the same as the server's own (it served nothing else).
            assert not split.get("reported")
            run = metrics["run_split"]
            assert run["requests"] == REQUESTS
            assert run["queue_s"] == pytest.approx(
                server_histogram_mean(server, "sglang:queue_time_seconds"), rel=1e-6
            )
            assert run["e2e_s"] == pytest.approx(
                server_histogram_mean(server, "sglang:e2e_request_latency_seconds"), rel=1e-6
            )
            return
        assert "run_split" not in metrics
        # The queue split out of each request is the engine's own account: vLLM's queue_time_ms,
        # llama.cpp's wait for a free slot (which it does not time) on the client's clock.
        assert split["reported"] == REQUESTS
        assert split["queue_reported"] is True
        queue_mean = split["queue_s"]["mean"]
        # The first four wait 0, 1, 2 and 3 services; each later one the three ahead of it.
        waits = [*range(CONCURRENCY), *[CONCURRENCY - 1] * (REQUESTS - CONCURRENCY)]
        assert queue_mean == pytest.approx(sum(waits) / REQUESTS * SERVICE_S, rel=0.1)
        if dialect == "vllm":
            own = server_histogram_mean(server, "vllm:request_queue_time_seconds")
            assert queue_mean == pytest.approx(own, abs=0.005)


def compare_one_slot_with_four(dialect: str, report: str) -> tuple[int, int, str, str]:
    with dialect_server(dialect, slots=4) as four_slots:
        four = run_against(four_slots, dialect, f"{dialect}-4slot", report)
    with dialect_server(dialect, slots=1) as one_slot:
        one = run_against(one_slot, dialect, f"{dialect}-1slot", report)
    found = {item.metric: item for item in why.explanations(runs.compare_runs([four, one]))}
    ttft = found["ttft_s"]
    return four, one, ttft.status, ttft.text


def test_llama_cpps_one_slot_loses_ttft_to_its_queue_and_names_its_reported_slots(
    db_url: str,
) -> None:
    _four, one, status, text = compare_one_slot_with_four("llamacpp", "llamacpp")
    assert status == "explained", text
    assert f"Queueing: #{one} llamacpp-1slot's requests waited" in text
    # /props said total_slots 1, and its running count stayed at 1: the setting is named.
    assert "stayed at its --parallel of 1 (reported by the engine)" in text


def test_vllms_queue_is_explained_without_citing_a_setting_it_never_reported(db_url: str) -> None:
    _four, one, status, text = compare_one_slot_with_four("vllm", "vllm")
    assert status == "explained", text
    assert f"Queueing: #{one} vllm-1slot's requests waited" in text
    # vLLM says nothing of its --max-num-seqs and Shootout did not launch it: never cited.
    assert "--max-num-seqs" not in text


def test_sglangs_queue_is_explained_from_its_own_run_totals(db_url: str) -> None:
    _four, one, status, text = compare_one_slot_with_four("sglang", "")
    # A streamed chat gets no per-request times from SGLang: its histograms' totals over the
    # step are its split, said to be a run mean, and its reported cap is named.
    assert status == "explained", text
    assert f"Queueing: #{one} sglang-1slot's requests waited" in text
    assert "(sglang:queue_time_seconds, time_to_first_token_seconds and" in text
    assert f"a run mean over the {REQUESTS} requests it counted in the step" in text
    assert "stayed at its --max-running-requests of 1 (reported by the engine)" in text
