"""Issue 54: an engine's own counters read at a step's first and last instant give exact totals
over the step, and a run-level split (queue, first token, whole request) for a kind that times no
single request: read here from the scripted server speaking SGLang or Triton, whose truth is
known."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.bench.spec import EngineTarget
from services.bench.window_counts import (
    Edge,
    RunSplitMeans,
    WindowCounts,
    WindowMeter,
    read_edge,
    run_split_of,
    window,
    with_window,
)
from services.engines import get_adapter
from services.engines.run_split import series_key
from tests.support.scripted_server import Identity, ScriptedServer


def target(server: ScriptedServer, kind: str = "sglang") -> EngineTarget:
    return EngineTarget(
        name="engine",
        base_url=server.base_url,
        kind=kind,
        model=server.model(ttft=60, itl=10, tokens=8),
        metrics_url=server.root_url + "/metrics",
    )


def send(server: ScriptedServer, requests: int, concurrency: int) -> None:
    def one(_: int) -> None:
        httpx2.post(
            server.base_url + "/chat/completions",
            json={
                "model": server.model(ttft=60, itl=10, tokens=8),
                "messages": [{"role": "user", "content": "one two three"}],
                "stream": True,
            },
            timeout=30,
        ).raise_for_status()

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(requests)))


def own_mean(server: ScriptedServer, family_name: str) -> tuple[float, float]:
    text = httpx2.get(server.root_url + "/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        if family.name == family_name:
            total = sum(s.value for s in family.samples if s.name.endswith("_sum"))
            count = sum(s.value for s in family.samples if s.name.endswith("_count"))
            return total, count
    raise AssertionError(family_name)


def test_the_run_split_is_the_engines_own_totals_over_the_step() -> None:
    with ScriptedServer(identity=Identity(dialect="sglang", slots=1)) as server:
        engine = target(server)
        send(server, 2, 1)  # before the step: outside its window
        meter = WindowMeter([engine], {"engine": engine.metrics_url})
        first = meter.begin(["engine"])
        before = own_mean(server, "sglang:queue_time_seconds")
        send(server, 8, 4)
        counts = meter.end(first)["engine"]
        after = own_mean(server, "sglang:queue_time_seconds")
    split = run_split_of(counts, get_adapter("sglang").run_split)
    assert split is not None
    # Only the step's 8 requests, each with the engine's own queue: exactly its totals' increase.
    assert split.requests == 8
    assert split.queue_s == pytest.approx((after[0] - before[0]) / (after[1] - before[1]), rel=1e-9)
    # One slot, four clients: three wait for it, the queue is most of the first token's time.
    assert split.queue_s > 0.1
    assert split.ttft_s is not None and split.e2e_s is not None
    assert split.queue_s < split.ttft_s < split.e2e_s
    # Counters of its signals too: generation tokens over the step, exactly 8 x 8.
    assert counts.counters["sglang:generation_tokens"] == 64
    assert counts.to_json()["counters"] == counts.counters
    assert WindowCounts.from_json(counts.to_json()) == counts
    assert RunSplitMeans.from_json(split.to_json()) == split


def own_counter(server: ScriptedServer, family_name: str, model: str) -> float:
    text = httpx2.get(server.root_url + "/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        if family.name == family_name:
            return sum(s.value for s in family.samples if s.labels.get("model") == model)
    raise AssertionError(family_name)


def test_tritons_run_split_is_its_served_models_own_totals_over_the_step() -> None:
    identity = Identity(dialect="triton", slots=1)
    totals = ("nv_inference_queue_duration_us", "nv_inference_request_duration_us")
    with ScriptedServer(identity=identity) as server:
        engine = replace(target(server, kind="triton"), model=identity.served_model)
        send(server, 2, 1)  # before the step: outside its window
        # The run names the model once it found it (a spec may leave it to discovery).
        meter = WindowMeter([replace(engine, model=None)], {"engine": engine.metrics_url})
        meter.serving([engine])
        first = meter.begin(["engine"])

        def own() -> list[float]:
            return [
                own_counter(server, name, identity.served_model)
                for name in ("nv_inference_request_success", *totals)
            ]

        before = own()
        send(server, 8, 4)
        counts = meter.end(first)["engine"]
        after = own()
    split = run_split_of(counts, get_adapter("triton").run_split_for(engine.model))
    assert split is not None
    served = after[0] - before[0]
    # The step's 8 requests, each with Triton's own µs totals: exactly their increase, as seconds.
    assert split.requests == served == 8
    assert split.e2e_s == pytest.approx((after[2] - before[2]) / 1e6 / served, rel=1e-9)
    # One slot, four clients: three wait for it, and the whole request holds that wait. The queue
    # counter is not read (services/engines/triton: blind to an in-flight batcher) and there is
    # no first-response series: neither part is known.
    assert split.e2e_s > 0.1
    assert split.queue_s is None and split.ttft_s is None
    # Stored with the step, for the model the step served (services/bench/jobs/summarize.py).
    stored = with_window(None, counts, "triton", engine.model).values["run_split"]
    assert RunSplitMeans.from_json(stored) == split
    assert "run_split" not in with_window(None, counts, "triton", "another").values


def test_a_total_that_went_down_gives_no_counts() -> None:
    first = Edge(at=1.0, counters={"c": 10.0}, histograms={"h": (5.0, 10.0)})
    last = Edge(at=2.0, counters={"c": 3.0}, histograms={"h": (1.0, 2.0)})
    counts = window(first, last)
    assert counts.reset is True and counts.counters == {} and counts.histograms == {}
    assert run_split_of(counts, get_adapter("sglang").run_split) is None


def test_a_dead_engine_is_an_error_at_its_edge_within_the_deadline() -> None:
    with ScriptedServer() as server:
        engine = target(server)
        url = server.root_url + "/metrics"
    started = time.perf_counter()
    edge = read_edge(engine, url)
    assert edge.error and edge.counters == {}
    assert time.perf_counter() - started < 5
    counts = window(edge, edge)
    assert counts.error and run_split_of(counts, get_adapter("sglang").run_split) is None


def test_a_kind_without_a_run_split_reads_its_counters_only() -> None:
    with ScriptedServer(identity=Identity(dialect="vllm", slots=2)) as server:
        engine = target(server, kind="vllm")
        first = read_edge(engine, engine.metrics_url)
        send(server, 4, 2)
        counts = window(first, read_edge(engine, engine.metrics_url))
    assert get_adapter("vllm").run_split is None
    assert counts.counters["vllm:generation_tokens"] == 32
    assert counts.histograms == {}


def test_a_histogram_sum_that_went_down_gives_no_counts() -> None:
    # A lying engine: more requests counted, less time in all. No negative queue is ever said.
    key = "sglang:queue_time_seconds"
    counts = window(
        Edge(at=1.0, histograms={key: (5.0, 10.0)}), Edge(at=2.0, histograms={key: (4.0, 12.0)})
    )
    assert counts.reset is True and counts.histograms == {}
    assert run_split_of(counts, get_adapter("sglang").run_split) is None


def test_a_run_split_whose_parts_cannot_hold_each_other_is_not_given() -> None:
    # Its queue longer than its first token, which holds the queue: the engine's totals disagree.
    split = get_adapter("sglang").run_split
    assert split is not None
    names = {part: series_key(mean.histogram) for part, mean in split.parts().items() if mean.histogram}
    lying = WindowCounts(
        seconds=1.0,
        histograms={
            names["queue"]: (20.0, 10.0),
            names["ttft"]: (5.0, 10.0),
            names["e2e"]: (30.0, 10.0),
        },
    )
    assert run_split_of(lying, split) is None
    honest = WindowCounts(
        seconds=1.0,
        histograms={names["queue"]: (2.0, 10.0), names["ttft"]: (5.0, 10.0), names["e2e"]: (30.0, 10.0)},
    )
    found = run_split_of(honest, split)
    assert found is not None and (found.queue_s, found.ttft_s, found.e2e_s) == (0.2, 0.5, 3.0)
