"""Issue 43: the self-check blames the generator only on the generator's own evidence. The time
outside the engine's clock (the rest, which holds the engine's front end) is shown beside the
verdict with its figure and whose it likely is, and no longer makes a load client-bound."""

from __future__ import annotations

from services.bench.blocks import GeneratorBlock
from services.bench.results import TimeSplitBlock
from services.bench.selfcheck import WorkerCheck, advice, headline, report, run_flagged, state
from services.bench.stats import RequestRecord, split_block
from services.bench.summary import BenchSummary
from services.bench.time_split import MIN_TIMED_REQUESTS, add_rest_evidence
from services.core.measure import EngineTimes


def with_rest(rest_s: float) -> dict[str, object]:
    """A `time_split` block of requests that each spent `rest_s` outside the engine's clock
    (vLLM on 2 busy cores: its front end tokenizing and detokenizing)."""
    records = [
        RequestRecord(
            "vllm",
            i,
            True,
            ttft_s=0.05,
            e2e_s=1.0,
            output_tokens=32,
            engine_times=EngineTimes(queue_s=0.001, prefill_s=0.03, decode_s=1.0 - 0.031 - rest_s),
        )
        for i in range(MIN_TIMED_REQUESTS)
    ]
    return split_block(records)


def loaded(check: WorkerCheck, rest_s: float) -> GeneratorBlock:
    generator = report([check], open_loop=False)
    add_rest_evidence(generator, TimeSplitBlock.from_json(with_rest(rest_s)))
    return generator


def test_a_calm_generator_beside_a_large_rest_kept_up_and_says_whose_the_rest_is() -> None:
    calm = WorkerCheck(loop_lag_s=[0.0003] * 150, cpu_s=0.2, wall_s=1.52)
    generator = loaded(calm, rest_s=0.942)
    assert generator["client_bound"] is False and generator["evidence"] == []
    assert state(generator) == "kept up"
    line = headline(generator)
    assert line is not None and line.startswith("generator kept up")
    assert "CLIENT-BOUND" not in line
    assert "time outside the engine's own clock p99 942 ms > 50 ms" in line
    assert "likely the engine's front end (tokenizing, detokenizing, its HTTP server)" in line
    words = advice(generator)
    assert words.startswith("TTFT and ITL are the engine's: the generator's own delay was ~0.300 ms")
    assert "quieter machine" not in words
    assert "Beside it: time outside the engine's own clock p99 942 ms" in words


def test_a_generator_held_up_by_its_own_evidence_is_still_client_bound() -> None:
    lagging = WorkerCheck(loop_lag_s=[0.0002] * 95 + [0.01242] * 5, cpu_s=0.02, wall_s=1.0)
    generator = loaded(lagging, rest_s=0.942)
    assert generator["client_bound"] is True and state(generator) == "client-bound"
    assert generator["evidence"] == ["event-loop lag p99 12.4 ms > 2 ms"]
    line = headline(generator)
    assert line is not None and line.startswith("CLIENT-BOUND (event-loop lag p99 12.4 ms > 2 ms):")
    assert "part of it the generator's own delay" in generator["rest_evidence"]
    assert "quieter machine" in advice(generator)


def test_a_run_stored_client_bound_on_the_rest_alone_is_judged_again() -> None:
    """Before this, the rest was added to the evidence and forced the verdict."""
    rest_line = (
        "time outside the engine's own clock (network, HTTP, its front end, the client) p99 "
        "1.80 s > 50 ms (p50 942 ms over 20 requests the engine timed)"
    )
    stored = {
        **report([WorkerCheck(loop_lag_s=[0.0003] * 150, cpu_s=0.2, wall_s=1.52)], open_loop=False),
        "client_bound": True,
        "checked": True,
        "evidence": [rest_line],
    }
    assert state(stored) == "kept up"
    line = headline(stored)
    assert line is not None and line.startswith("generator kept up") and rest_line in line
    run_level = {"client_bound": True, "flagged": [{"engine": "vllm", "evidence": [rest_line]}]}
    assert not run_flagged(run_level)
    assert run_flagged({"client_bound": True, "flagged": []})  # nothing says on what: as stored
    summary = BenchSummary.from_json(
        {"engines": {"vllm": {"completed": 20, "generator": stored}}, "generator": run_level}
    )
    assert summary.self_check == "kept up" and not summary.client_bound
    # A load flagged on its own evidence as well stays client-bound.
    lagging = {**stored, "evidence": ["event-loop lag p99 12.42 ms > 2 ms", rest_line]}
    assert state(lagging) == "client-bound"
    assert run_flagged({"client_bound": True, "flagged": [{"evidence": lagging["evidence"]}]})
