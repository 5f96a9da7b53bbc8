"""Issue 55: the self-check weighs the generator's own delay against the figures it could distort.
A 14 ms loop lag beside llama.cpp's 4,196 ms TTFT on one slot at concurrency 4 leaves the figures
good to about 0.3%, and the engine's queue, not the generator, is named as the limit; a lag as large
as the figures, a loop starved of its core or a worker out of CPU stays client-bound."""

from __future__ import annotations

from typing import Any

from services.bench import selfcheck
from services.bench.results import EngineResults
from services.bench.selfcheck import WorkerCheck, report
from services.bench.summary import BenchSummary
from services.bench.time_split import add_rest_evidence

#: The generator of issue 55's llamacpp-1slot load: its loop woke 14 ms late at p99 (2 cores
#: shared with the engine), a calm loop otherwise, 5% of a core.
LAGGING = WorkerCheck(loop_lag_s=[0.0002] * 95 + [0.014] * 5, cpu_s=0.05, wall_s=1.0)


def one_slot_block(generator: dict[str, Any], *, ttft_s: float = 4.196) -> dict[str, Any]:
    """llama.cpp on one slot at concurrency 4 (issue 55): each request waits 3.66 s for the slot,
    then 0.5 s of prefill and 64 tokens at 13.5 ms."""
    return {
        "completed": 40,
        "output_tokens": 40 * 64,
        "ttft_s": {"p50": ttft_s, "p99": ttft_s + 0.3},
        "tpot_s": {"p50": 0.0135, "p99": 0.015},
        "itl_s": {"p50": 0.013, "p99": 0.03},
        "e2e_s": {"p50": ttft_s + 0.85, "p99": ttft_s + 1.2},
        "output_throughput_tok_s": 48.0,
        "engine_metrics": {"requests_waiting_max": 3.0},
        "time_split": {
            "requests": 40,
            "reported": 40,
            "queue_reported": True,
            "source": "timings, the wait for a free slot from the client's clock",
            "queue_s": {"mean": 3.66, "p50": 3.66, "p99": 3.9},
            "prefill_s": {"mean": 0.5, "p50": 0.5, "p99": 0.55},
            "decode_s": {"mean": 0.85, "p50": 0.85, "p99": 0.9},
            "e2e_rest_s": {"mean": 0.004, "p50": 0.003, "p99": 0.02},
            "e2e_s": {"mean": 5.01, "p50": 5.0, "p99": 5.4},
        },
        "generator": generator,
    }


def summarized(block: dict[str, Any]) -> dict[str, Any]:
    """What jobs/summarize.py does to a load's block once its figures are known."""
    results = EngineResults.from_json(block)
    selfcheck.weigh(block["generator"], results)
    add_rest_evidence(block["generator"], results.time_split)
    return block


def test_the_one_slot_queue_is_the_engines_limit_not_the_generators() -> None:
    generator = report([LAGGING], open_loop=False)
    assert generator["client_bound"] is True  # the raw report, before it is weighed
    block = summarized(one_slot_block(generator))
    check = block["generator"]
    assert check["client_bound"] is False and selfcheck.state(check) == "kept up"
    assert check["evidence"] == ["event-loop lag p99 14.0 ms > 2 ms"]  # kept, said, weighed
    assert check["weighed"]["figures_ms"] == {"TTFT p50": 4196.0, "E2E p50": 5046.0}
    assert check["weighed"]["bound"] == round(14 / 4196, 5)
    line = selfcheck.headline(check)
    assert line is not None and line.startswith(
        "generator kept up (1 worker(s)): its own delay, 14.0 ms"
    )
    assert "CLIENT-BOUND" not in line
    assert "they are good to about 0.3%" in line
    assert "the engine was the limit: requests spent 73% of their E2E in its own queue" in line
    words = selfcheck.advice(check)
    assert words.startswith("TTFT and E2E are the engine's to within about 0.3%")
    assert "TPOT and ITL are gaps between two timestamps late alike, unbiased by it" in words
    assert "a single gap may read up to ~14.0 ms off (ITL's p99 most)" in words
    assert "The engine was the limit" in words and "quieter machine" not in words

    run = BenchSummary.from_json({"engines": {"llamacpp-1slot": block}}).run_check()
    assert not run.client_bound and run.state == "kept up"
    assert run.distortion == round(14 / 4196, 5) and run.engine_limited
    assert run.title == (
        "The load generator kept up: its own delay leaves these figures good to about 0.3%. "
        "The engine was the limit: requests waited in its own queue."
    )


def test_a_run_stored_client_bound_on_that_lag_is_weighed_when_read() -> None:
    """The run of issue 55 as it was stored: client-bound on the lag alone, run-level flagged."""
    generator = report([LAGGING], open_loop=False)
    block = one_slot_block(generator)
    stored = {
        "engines": {"llamacpp-1slot": block},
        "generator": {
            "client_bound": True,
            "checked": True,
            "flagged": [{"engine": "llamacpp-1slot", "step": None, "evidence": generator["evidence"]}],
        },
    }
    summary = BenchSummary.from_json(stored)
    assert summary.self_check == "kept up" and not summary.client_bound
    check = summary.run_check()
    assert not check.title.startswith("Client-bound")
    assert check.title.startswith("The load generator kept up: its own delay leaves these figures")
    assert block["generator"] is generator and "weighed" not in generator  # read, not rewritten


def test_a_lag_as_large_as_the_figures_stays_client_bound() -> None:
    """The same 14 ms beside a fast engine's 40 ms TTFT is a third of it: the generator's."""
    block = summarized(one_slot_block(report([LAGGING], open_loop=False), ttft_s=0.04))
    check = block["generator"]
    assert check["client_bound"] is True and selfcheck.state(check) == "client-bound"
    line = selfcheck.headline(check)
    assert line is not None and line.startswith("CLIENT-BOUND (event-loop lag p99 14.0 ms > 2 ms): ")
    assert "its own delay, 14.0 ms at p99, is up to 35% of the figures it could distort" in line
    run = BenchSummary.from_json({"engines": {"fast": block}}).run_check()
    assert run.client_bound and run.title.startswith("Client-bound: the load generator")


def test_a_starved_or_cpu_bound_generator_stays_client_bound_beside_any_figures() -> None:
    """A loop kept off its core or a worker out of CPU limited the load itself: no figure,
    however large, weighs that away."""
    starved = WorkerCheck(loop_lag_s=[0.0002] * 40, cpu_s=0.05, wall_s=1.0)  # late 59% of the run
    busy = WorkerCheck(loop_lag_s=[0.0002] * 95 + [0.014] * 5, cpu_s=0.97, wall_s=1.0)
    for worker in (starved, busy):
        block = summarized(one_slot_block(report([worker], open_loop=False)))
        check = block["generator"]
        assert check["client_bound"] is True and selfcheck.state(check) == "client-bound", check
        assert BenchSummary.from_json({"engines": {"e": block}}).run_check().client_bound


def test_a_calm_generator_names_the_engine_as_the_limit_too() -> None:
    calm = WorkerCheck(loop_lag_s=[0.0002] * 150, cpu_s=0.2, wall_s=1.52)
    block = summarized(one_slot_block(report([calm], open_loop=False)))
    check = block["generator"]
    assert selfcheck.state(check) == "kept up" and "weighed" in check
    run = BenchSummary.from_json({"engines": {"e": block}}).run_check()
    assert (
        run.title
        == "The load generator kept up. The engine was the limit: requests waited in its own queue."
    )
    assert selfcheck.advice(check).startswith(
        "TTFT and ITL are the engine's: the generator's own delay was"
    )
