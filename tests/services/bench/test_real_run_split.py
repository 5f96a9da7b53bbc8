"""Issue 54 against the real SGLang: it times no single request of a streamed chat, so its own
histograms' totals over the step are its split. Read at the step's first and last instant, they
count exactly the step's requests and tokens (the run's own count of what it received), and the
queue of concurrency 4 is in them."""

from __future__ import annotations

import pytest

from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec
from services.bench.workloads import WorkloadSpec

pytestmark = pytest.mark.engines

REQUESTS = 12


def test_sglangs_own_totals_over_the_step_are_its_split(local_engines: list) -> None:
    spec = BenchSpec(
        engines=(jobs.engine_target("sglang-cpu"),),
        workload=WorkloadSpec(input_len=64, output_len=24),
        load=LoadSpec(concurrency=4, requests=REQUESTS),
        timeout_s=300,
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    block = summary["engines"]["sglang-cpu"]
    assert (block["completed"], block["failed"]) == (REQUESTS, 0)
    metrics = block["engine_metrics"]
    window = metrics["window"]
    assert not window.get("error") and not window.get("reset"), window
    # SGLang counted what the client received, over exactly the step's requests.
    assert window["counters"]["sglang:generation_tokens"] == block["output_tokens"], window
    run = metrics["run_split"]
    assert run["requests"] == REQUESTS, run
    assert "sglang:queue_time_seconds" in run["source"]
    # Its first token and its whole request hold its queue; the client's means hold them.
    assert 0 <= run["queue_s"] < run["ttft_s"] < run["e2e_s"], run
    assert run["ttft_s"] <= block["ttft_s"]["mean"] + 0.05, (run, block["ttft_s"])
    assert run["e2e_s"] <= block["e2e_s"]["mean"] + 0.05, (run, block["e2e_s"])
