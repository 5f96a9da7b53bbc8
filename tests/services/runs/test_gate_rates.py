"""The gate's error rates at the README's limits, on synthetic per-request records through the
same gate (`gate.evaluate` on stored runs): 20 full benchmark runs per rate on two shared cores
would take minutes, so the runs are drawn, not served. Each run is the README job's shape (200
requests, 128 answer tokens, concurrency 8), with per-request TTFT and inter-token time drawn
from lognormals; each pair is two setups as a fresh CI database sees them (no stored repeats),
so the within-run intervals judge.

- False alarms: 20 pairs of runs of one setup at "ttft_p90:+10%,output_tok_s:-5%": none fails.
- Detection: 20 tries of a candidate whose output rate is 15% lower: each one caught.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from db.models import RequestResult, Run
from db.session import session_scope
from services.core.measure import describe
from services.runs import gate
from tests.services.runs.test_comparability import bench_config, block

README_CHECKS = "ttft_p90:+10%,output_tok_s:-5%"
REQUESTS, TOKENS, CONCURRENCY = 200, 128, 8
TTFT_S, ITL_S = 0.050, 0.020
#: The inter-token time's factor that makes the mean request 1/0.85 as long: 15% fewer tokens/s.
SLOWER_ITL = ((TTFT_S + (TOKENS - 1) * ITL_S) / 0.85 - TTFT_S) / ((TOKENS - 1) * ITL_S)


def drawn_run(rng: np.random.Generator, index: int, itl_factor: float = 1.0) -> int:
    """A stored run of drawn requests; its summary computed from them as the benchmark does
    (a closed loop's duration is its requests' time over the concurrency)."""
    ttft = TTFT_S * rng.lognormal(0.0, 0.3, REQUESTS)
    itl = ITL_S * itl_factor * rng.lognormal(0.0, 0.1, REQUESTS)
    return stored_run(ttft, itl, index, (ttft + (TOKENS - 1) * itl).sum() / CONCURRENCY)


def closed_loop_end(e2e: np.ndarray, slots: int) -> float:
    """When a closed loop of `slots` that sends these requests in order ends."""
    free_at = np.zeros(slots)
    for seconds in e2e:
        free_at[free_at.argmin()] += seconds
    return float(free_at.max())


def stored_run(ttft: np.ndarray, itl: np.ndarray, index: int, duration: float) -> int:
    """A stored run of these requests, in this order, that lasted `duration`."""
    e2e = ttft + (TOKENS - 1) * itl
    requests = e2e.size
    numbers: dict[str, Any] = block(
        completed=requests,
        failed=0,
        output_tokens=requests * TOKENS,
        input_tokens=requests * 140,
        output_throughput_tok_s=requests * TOKENS / duration,
        request_throughput_rps=requests / duration,
        ttft_s=describe(ttft),
        e2e_s=describe(e2e),
    )
    # Another setup each time (a fresh CI database holds no repeats of either side).
    config = {**bench_config(concurrency=CONCURRENCY, requests=requests), "seed": index}
    with session_scope() as session:
        run = Run(
            kind="benchmark",
            name=f"drawn {index}",
            status="finished",
            config=config,
            summary={"engines": {"vllm": numbers}, "sweep": []},
            engines=[{"name": "vllm", "kind": "vllm", "model": "smollm2", "version": "0.11.0"}],
            engine_names="vllm",
            model="smollm2",
            workload="chat",
            tags=[],
            notes="",
        )
        session.add(run)
        session.flush()
        session.add_all(
            RequestResult(
                run_id=run.id,
                engine_name="vllm",
                index=i,
                ok=True,
                ttft_s=float(ttft[i]),
                e2e_s=float(e2e[i]),
                tpot_s=float(itl[i]),
                itl_s=[],
                input_tokens=140,
                output_tokens=TOKENS,
            )
            for i in range(requests)
        )
        return run.id


def test_readme_limits_hold_false_alarms_and_catch_a_15_percent_drop(db_url: str) -> None:
    rng = np.random.default_rng(43)
    checks = gate.parse_fail_on(README_CHECKS)
    runs_of_one_setup = [drawn_run(rng, i) for i in range(21)]
    false_alarms = [
        gate.evaluate(a, [b], checks).exit_code for a, b in itertools.pairwise(runs_of_one_setup)
    ]
    assert false_alarms == [gate.EXIT_PASS] * 20

    caught = []
    for i, base in enumerate(runs_of_one_setup[:20]):
        result = gate.evaluate(base, [drawn_run(rng, 100 + i, SLOWER_ITL)], checks)
        rate = next(c for c in result.checks if c.threshold.name == "output_tok_s")
        assert -18 < (rate.change_pct or 0) < -12  # the drop is about 15%
        # Caught by the within-run interval, not merely for want of a noise verdict.
        assert rate.noise.method == "bootstrap" and rate.noise.status == "beyond"
        caught.append(rate.status == "fail" and result.exit_code == gate.EXIT_REGRESSION)
    assert sum(caught) == 20


def test_a_short_closed_loop_run_whose_slowest_request_came_last_is_within_noise(
    db_url: str,
) -> None:
    """The same 40 requests at concurrency 8, twice: once the slowest (3x) is sent first, once
    last, so the second run ends while 7 of its 8 slots idle, its output rate some 10% lower.
    Replaying each run's requests through its slots shows that as noise; the requests' summed
    time alone called it a regression."""
    rng = np.random.default_rng(7)
    ttft = TTFT_S * rng.lognormal(0.0, 0.3, 40)
    itl = ITL_S * rng.lognormal(0.0, 0.1, 40)
    slowest = np.argmax(ttft + (TOKENS - 1) * itl)
    itl[slowest] *= 3
    first = np.r_[slowest, np.delete(np.arange(40), slowest)]
    last = np.r_[np.delete(np.arange(40), slowest), slowest]

    def run(order: np.ndarray, index: int) -> int:
        e2e = (ttft + (TOKENS - 1) * itl)[order]
        return stored_run(ttft[order], itl[order], index, closed_loop_end(e2e, CONCURRENCY))

    base, candidate = run(first, 1), run(last, 2)
    result = gate.evaluate(base, [candidate], gate.parse_fail_on("output_tok_s:-5%"))
    rate = result.checks[0]
    assert (rate.change_pct or 0) < -8
    assert rate.noise.method == "bootstrap" and rate.noise.status == "within"
    assert result.exit_code != gate.EXIT_REGRESSION
