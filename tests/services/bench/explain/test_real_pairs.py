"""Issue 54 on real engines: a comparison says why the winner won, from the engines' own account,
and every figure it states is the one stored from that account.

llama.cpp with 1 slot against 4 slots, at concurrency 4 (the issue's first pair): the 1-slot
server's requests wait for its one slot (its `requests_deferred`, its running count at its
`--parallel` of 1), so its TTFT loses to queueing; the 4-slot server decodes about 3 requests at
once, so its ITL loses to batch width, and its throughput wins by it. Through the product's own
path: a run of both engines, `compare_runs`, `why.explanations`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from services import local_engines as launcher
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.explain import Explanation
from services.bench.spec import BenchSpec
from services.bench.workloads import WorkloadSpec
from services.runs import why
from services.runs.comparison import compare_runs

pytestmark = pytest.mark.engines

REQUESTS = 16
OUTPUT = 32


def cold(engine_id: str) -> None:
    """Restart a llama.cpp server (about a second): its prompt cache starts empty. Whatever the
    suite sent it before would be in the cache, and the chat template every prompt shares (a
    third of a 64-token prompt) is enough for "warm at start"; telling that apart from an
    earlier run of the same prompts needs a probe of what a prompt it never saw finds cached."""
    launcher.stop(engine_id)
    assert launcher.start(engine_id, wait=True).status == "running"


@pytest.fixture
def cold_four(local_engines: list) -> Iterator[None]:
    """The 4-slot server cold for the test, and cold again after it: what these runs leave in
    its prompt cache changes how later prompts are computed (the same-model demo's answers
    parted from the 1-slot server's by rounding after them)."""
    cold("llamacpp-4slot")
    yield
    cold("llamacpp-4slot")


def by_metric(found: list[Explanation]) -> dict[str, Explanation]:
    return {item.metric: item for item in found}


def test_one_slot_against_four_is_explained_by_its_queue_and_their_batch(cold_four: None) -> None:
    spec = BenchSpec(
        engines=(jobs.engine_target("llamacpp-4slot"), jobs.engine_target("llamacpp-1slot")),
        # The 4-slot server's cache filled by this run's own requests: the engine's own
        # difference (an earlier run of the same prompts is a reason to refuse: below).
        workload=WorkloadSpec(input_len=64, output_len=OUTPUT, seed=time.time_ns() % 1_000_003),
        load=LoadSpec(concurrency=4, requests=REQUESTS),
        timeout_s=600,
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    four, one = summary["engines"]["llamacpp-4slot"], summary["engines"]["llamacpp-1slot"]
    for block in (four, one):
        assert (block["completed"], block["failed"]) == (REQUESTS, 0), block
        # The engine's own count over the step is what the client received.
        window = block["engine_metrics"]["window"]
        assert not window.get("error") and not window.get("reset"), window
        assert window["counters"]["llamacpp:tokens_predicted"] == block["output_tokens"], window

    comparison = compare_runs([run_id])
    said = by_metric(why.explanations(comparison))
    assert comparison.comparability.names_winners, [
        d.text for v in comparison.comparability.verdicts for d in v.differences
    ]

    ttft = said["ttft_s"]
    assert (ttft.status, ttft.winner, ttft.loser) == (
        "explained",
        "#1 llamacpp-4slot",
        "#1 llamacpp-1slot",
    ), ttft
    queue = ttft.claims[0]
    assert queue.cause == "queue", ttft.text
    # The figure it states is the stored one: the 1-slot server's mean wait for its slot.
    stored_queue = one["time_split"]["queue_s"]["mean"]
    assert queue.evidence["loser_queue_s"] == pytest.approx(stored_queue, rel=1e-9)
    assert stored_queue > 0.5 and four["time_split"]["queue_s"]["mean"] == 0.0
    assert "llamacpp:requests_deferred" in queue.sentence
    assert "stayed at its --parallel of 1" in queue.sentence

    itl = said["itl_s"]
    assert (itl.status, itl.loser) == ("explained", "#1 llamacpp-4slot"), itl
    batch = itl.claims[0]
    assert batch.cause == "batch_width", itl.text
    # The widths it states are the engines' own running counts over the step.
    running_four = four["engine_metrics"]["requests_running_mean"]
    running_one = one["engine_metrics"]["requests_running_mean"]
    assert batch.evidence["loser_width"] == pytest.approx(running_four, rel=1e-9)
    assert batch.evidence["winner_width"] == pytest.approx(running_one, rel=1e-9)
    assert running_four > 2.0 and running_one == pytest.approx(1.0, abs=0.05)
    assert "llamacpp:requests_processing" in batch.sentence

    throughput = said["output_throughput_tok_s"]
    assert (throughput.status, throughput.winner) == ("explained", "#1 llamacpp-4slot"), throughput
    assert throughput.claims[0].cause == "batch_width", throughput.text


def test_a_cache_warmed_by_an_earlier_run_of_the_same_prompts_is_not_explained_away(
    cold_four: None,
) -> None:
    """The 4-slot server's prompt cache holds a whole earlier run of the same prompts: the
    comparison refuses to name a winner and says why, rather than crediting the cache."""
    workload = WorkloadSpec(input_len=64, output_len=8, seed=time.time_ns() % 1_000_003 + 7)
    warm = BenchSpec(
        engines=(jobs.engine_target("llamacpp-4slot"),),
        workload=workload,
        load=LoadSpec(concurrency=2, requests=8),
        timeout_s=300,
    )
    jobs.execute_run(jobs.create_run(warm))
    spec = BenchSpec(
        engines=(jobs.engine_target("llamacpp-4slot"), jobs.engine_target("llamacpp-1slot")),
        workload=workload,
        load=LoadSpec(concurrency=2, requests=8),
        timeout_s=300,
    )
    run_id = jobs.create_run(spec)
    jobs.execute_run(run_id)
    said = why.explanations(compare_runs([run_id]))
    assert [item.status for item in said] == ["guarded"], [item.text for item in said]
    assert "not comparable" in said[0].text and "cache" in said[0].text.lower(), said[0].text
