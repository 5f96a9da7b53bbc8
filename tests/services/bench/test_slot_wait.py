"""Issue 55: llama.cpp's wait for a free slot is its queue, never "network, HTTP, front end,
client". Its `timings` (prompt_ms, predicted_ms) start when a slot takes the request; the wait
before is read on the client's clock, from the send to the end of the request whose slot it
took, as its adapter declares (`EngineAdapter.untimed_queue`)."""

from __future__ import annotations

import pytest

from services.bench.arrivals import LoadSpec
from services.bench.jobs.summarize import build_summary
from services.bench.results import EngineMetrics
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.stats import RequestRecord
from services.bench.time_split import SLOT_MATCH_S, engine_queue, engine_said_waited
from services.bench.view.split import split_lines
from services.bench.workloads import WorkloadSpec
from services.core.measure import EngineTimes
from services.engines import get_adapter

PREFILL_S, DECODE_S, NETWORK_S = 0.5, 0.85, 0.002


def one_slot(
    requests: int = 24, concurrency: int = 4, engine: str = "llamacpp-1slot"
) -> list[RequestRecord]:
    """A closed loop of `concurrency` on one slot: each client slot sends its next request as its
    last one ends, the engine takes them first come, first served, 0.5 s of prefill and 0.85 s of
    decode each, 2 ms of network and HTTP before the slot takes it."""
    free_at = 0.0  # when the engine's one slot frees
    client_free = [0.0] * concurrency
    records = []
    for index in range(requests):
        slot = min(range(concurrency), key=lambda s: client_free[s])
        start = client_free[slot]
        began = max(start + NETWORK_S, free_at)  # prefill begins when the slot takes it
        end = began + PREFILL_S + DECODE_S
        free_at = end
        client_free[slot] = end
        records.append(
            RequestRecord(
                engine=engine,
                index=index,
                ok=True,
                start_s=start,
                ttft_s=began + PREFILL_S - start,
                e2e_s=end - start,
                output_tokens=64,
                engine_times=EngineTimes(prefill_s=PREFILL_S, decode_s=DECODE_S, source="timings"),
            )
        )
    return records


def spec(kind: str = "llamacpp", name: str = "llamacpp-1slot") -> BenchSpec:
    return BenchSpec(
        engines=(EngineTarget(name=name, base_url="http://127.0.0.1:9", kind=kind, model="m"),),
        workload=WorkloadSpec(input_len=64, output_len=64),
        load=LoadSpec(concurrency=4, requests=24),
    )


def test_the_slot_wait_is_llama_cpps_queue_in_the_stored_split() -> None:
    records = one_slot()
    summary = build_summary(spec(), records, None)
    split = summary["engines"]["llamacpp-1slot"]["time_split"]
    assert split["queue_reported"] is True
    # In steady state each request waits for the three ahead of it: 3 x 1.35 s (its 2 ms of
    # network and HTTP went by while it waited).
    assert split["queue_s"]["p50"] == pytest.approx(3 * (PREFILL_S + DECODE_S), abs=1e-6)
    # Only the first request, which found the slot free, has its 2 ms in the rest.
    assert split["e2e_rest_s"]["max"] == pytest.approx(NETWORK_S, abs=1e-6)
    assert "the wait for a free slot from the client's clock" in split["source"]
    (line,) = split_lines(summary, {"llamacpp-1slot": "llama.cpp"})
    assert (
        "= queue 3712.8 + prefill 500.0 + decode 850.0 + rest: network, HTTP, front end, client 0.1 ms"
        in line
    )


def test_each_request_waits_until_the_slot_it_took_freed() -> None:
    records = one_slot(requests=8)
    timed = engine_queue(records, "llamacpp", waited=True)
    waits = [r.engine_times.queue_s for r in timed if r.engine_times is not None]
    # The first found the slot free; the next three waited for those ahead of them.
    service = PREFILL_S + DECODE_S
    assert waits[:4] == pytest.approx([0.0, service, 2 * service, 3 * service], abs=NETWORK_S + 1e-9)
    for record in timed:
        split = record.time_split
        assert (
            split is not None and split.ttft_rest_s is not None and split.ttft_rest_s <= NETWORK_S + 1e-9
        )


def test_the_engines_word_and_the_kind_decide() -> None:
    records = one_slot(requests=8)
    # The engine said none waited (its requests_deferred stayed 0): every queue is 0.
    none_waited = EngineMetrics({"requests_waiting_max": 0})
    said_none = engine_queue(records, "llamacpp", waited=engine_said_waited(none_waited))
    assert {r.engine_times.queue_s for r in said_none if r.engine_times} == {0.0}
    assert engine_said_waited(EngineMetrics({"requests_waiting_max": 3.0})) is True
    assert engine_said_waited(EngineMetrics({"prefix_cache_hit_rate": None})) is None
    assert engine_said_waited(None) is None
    # A kind that declares no untimed queue keeps its gap in the rest, as before.
    assert get_adapter("vllm").untimed_queue is None
    assert engine_queue(records, "vllm") == records
    # A kind that times its queue keeps its own figure.
    timed = [
        RequestRecord(
            "e",
            0,
            True,
            start_s=0.0,
            ttft_s=0.6,
            e2e_s=1.5,
            engine_times=EngineTimes(queue_s=0.05, prefill_s=0.5),
        )
    ]
    assert engine_queue(timed, "llamacpp")[0].engine_times == timed[0].engine_times


def test_a_chance_end_in_a_short_gap_costs_at_most_that_gap() -> None:
    """Four slots, nobody waits: another slot's request ending in a request's 2 ms gap before
    prefill (or up to SLOT_MATCH_S after) makes at most those 2 ms its queue, never more."""
    mine = RequestRecord(
        "e",
        0,
        True,
        start_s=10.0,
        ttft_s=NETWORK_S + PREFILL_S,
        e2e_s=1.4,
        engine_times=EngineTimes(prefill_s=PREFILL_S, decode_s=0.85),
    )
    other = RequestRecord(
        "e", 1, True, start_s=8.0, ttft_s=0.6, e2e_s=2.0 + NETWORK_S + SLOT_MATCH_S / 2
    )
    earlier = RequestRecord("e", 2, True, start_s=5.0, ttft_s=0.6, e2e_s=1.0)
    (timed, _, _) = engine_queue([mine, other, earlier], "llamacpp")
    assert timed.engine_times is not None and timed.engine_times.queue_s == pytest.approx(NETWORK_S)
    # Its own end is no slot it waited for, and an end before its send is none either.
    alone = engine_queue([mine, earlier], "llamacpp")[0]
    assert alone.engine_times is not None and alone.engine_times.queue_s == 0.0
