"""Issue 55 against the real llama.cpp: one slot at concurrency 4. Each request waits for the
three ahead of it; that wait is the engine's queue in the stored split (never the rest), and the
self-check names the engine as the limit instead of blaming the load generator."""

from __future__ import annotations

import pytest

from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec
from services.bench.summary import BenchSummary
from services.bench.time_split import REST_P99_LIMIT_S
from services.bench.view.split import split_lines
from services.bench.workloads import WorkloadSpec

pytestmark = pytest.mark.engines


def test_one_slot_at_concurrency_4_waits_in_the_engines_queue(local_engines: list) -> None:
    spec = BenchSpec(
        engines=(jobs.engine_target("llamacpp-1slot"),),
        workload=WorkloadSpec(input_len=64, output_len=32),
        load=LoadSpec(concurrency=4, requests=16, warmup_requests=1),
        timeout_s=300,
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    block = summary["engines"]["llamacpp-1slot"]
    assert (block["completed"], block["failed"]) == (16, 0)
    split = block["time_split"]
    assert split["queue_reported"] is True, split
    service = split["prefill_s"]["mean"] + split["decode_s"]["mean"]
    # Three ahead of each request once the loop is full: the wait is most of its E2E ...
    assert split["queue_s"]["mean"] > 2 * service, split
    # ... and what is left outside the engine's clock is loopback HTTP, not seconds of waiting.
    assert split["e2e_rest_s"]["p50"] < REST_P99_LIMIT_S, split
    assert "the wait for a free slot from the client's clock" in split["source"]
    # llama.cpp said so itself: its deferred requests, sampled during the run.
    assert block["engine_metrics"]["requests_waiting_max"] >= 1, block["engine_metrics"]
    (line,) = split_lines(summary, {"llamacpp-1slot": "llama.cpp"})
    rest_ms = float(line.split("rest: network, HTTP, front end, client ")[1].split(" ")[0])
    assert rest_ms < REST_P99_LIMIT_S * 1000, line

    check = BenchSummary.from_json(summary).run_check()
    (load,) = check.loads
    assert not check.client_bound, (check.title, load.evidence)
    assert not check.title.startswith("Client-bound"), check.title
    assert check.engine_limited and "The engine was the limit" in check.title, check.title
    assert "CLIENT-BOUND" not in load.evidence and "the engine was the limit" in load.evidence
    generator = block["generator"]
    if generator["evidence"]:  # the loop lagged on the busy host: weighed, said, not blamed
        assert load.lag_weighed and load.distortion is not None and load.distortion <= 0.02, load
        assert "they are good to about" in load.evidence
