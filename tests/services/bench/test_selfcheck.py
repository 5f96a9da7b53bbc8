"""The generator's self-check: a starved worker is flagged client-bound with evidence, a
calm one is not, a run too short to tell says it could not check, several workers' reports
merge from their raw samples, and the advice says what the verdict means for the figures."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from services.bench.arrivals import LoadSpec
from services.bench.runner import execute_load
from services.bench.selfcheck import WorkerCheck, advice, headline, remedy, report, state
from services.bench.spec import EngineTarget
from services.bench.workloads import WorkloadSpec
from services.core.measure import percentile
from tests.support.scripted_server import ScriptedServer

#: A hog that takes its core in real-time bursts: 4 ms busy, 4 ms asleep, over and over.
#: While a burst runs, nothing of normal priority runs on that core, so a probe or a send
#: falling into one wakes up to 4 ms late, on every kernel. Plain busy loops starve by the
#: fair scheduler's grace instead: it lets a thread that mostly sleeps cut in on wake-up, how
#: soon varies by kernel and run (one CI run's starved loop lagged under 2 ms at p99).
HOG = """
import os, time
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
while True:
    until = time.perf_counter() + 0.004
    while time.perf_counter() < until:
        pass
    time.sleep(0.004)
"""

#: A hog that holds its core for 150 ms at a time (5 ms off): a loop beside it wakes a
#: handful of times a second, fewer than the verdict's 20 lag probes in a short run, as in
#: issue 31 (18 wake-ups beside two busy loops under taskset, and "kept up").
LONG_HOG = """
import os, time
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
while True:
    until = time.perf_counter() + 0.15
    while time.perf_counter() < until:
        pass
    time.sleep(0.005)
"""


def engine(server: ScriptedServer) -> EngineTarget:
    return EngineTarget(
        name="scripted",
        base_url=server.base_url,
        kind="vllm",
        model=server.model(ttft=5, itl=2, tokens=64),
    )


@contextmanager
def ahead_of_the_neighbours() -> Iterator[None]:
    """This thread (the load's event loop) ahead of other engineers' work on these shared
    cores, so that "calm" means calm: real-time priority, harmless for a thread that uses a
    few percent of a core, and dropped again at once."""
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    try:
        yield
    finally:
        os.sched_setscheduler(0, before[0], before[1])


@contextmanager
def starved_on_one_core(hogs: int = 1, hog: str = HOG) -> Iterator[None]:
    """This thread (the load's event loop) pinned to one core beside a process that takes
    that core in real-time bursts (by default half of it)."""
    core = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    started = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(hogs)]
    try:
        for process in started:
            os.sched_setaffinity(process.pid, {core})
        os.sched_setaffinity(0, {core})
        yield
    finally:
        os.sched_setaffinity(0, before)
        for process in started:
            process.kill()
            process.wait()


def run_load(server: ScriptedServer) -> dict:
    outcome = execute_load(
        engine(server),
        WorkloadSpec(input_len=16, output_len=64),
        LoadSpec(
            mode="rate", rate=40, concurrency=None, requests=None, duration_s=2.5, arrival="constant"
        ),
    )
    assert outcome.measured and all(record.ok for record in outcome.measured)
    return outcome.generator


def test_a_starved_worker_is_flagged_and_a_calm_one_is_not(scripted_server: ScriptedServer) -> None:
    # Two cores shared with other engineers' work: a calm run may be genuinely starved by
    # them (the check is right to say so then); one clean run in six shows the baseline. Real-time
    # priority does not shield a VM the hypervisor pauses: in one slow CI run (the suite took
    # twice its time) three calm tries in a row lagged 3.6-8.6 ms at p99, so a pause lets such
    # a spell pass between tries.
    with ahead_of_the_neighbours():
        tries = [run_load(scripted_server)]
        while tries[-1]["client_bound"] and len(tries) < 6:
            time.sleep(2)
            tries.append(run_load(scripted_server))
    calm = tries[-1]
    assert calm["client_bound"] is False, [t["evidence"] for t in tries]
    assert calm["workers"] == 1 and calm["loop_lag_samples"] >= 100
    assert calm["send_lateness_ms"]["p50"] < 1.5
    assert calm["open_connections_max"] >= 1
    with starved_on_one_core():
        starved = run_load(scripted_server)
    assert starved["client_bound"] is True
    assert any("event-loop lag p99" in line for line in starved["evidence"]), starved["evidence"]
    assert starved["loop_lag_ms"]["p99"] > 1.0
    assert headline(starved).startswith("CLIENT-BOUND (event-loop lag p99")
    # Starved beside a hog, the worker got less than a core: more workers would not help.
    if not any(w["cpu_share"] > 0.85 for w in starved["per_worker"]):
        assert "what helps: free cores or a quieter host, not more workers" in headline(starved)
    assert headline(calm).startswith("generator kept up")


def test_the_remedy_tells_a_busy_worker_from_a_busy_host() -> None:
    """More workers help a worker that used up its core; a lagging loop whose workers all had
    CPU to spare is a busy host (the engine or other work on its cores), where they do not."""
    busy_worker = {"per_worker": [{"worker": 0, "cpu_share": 0.97}, {"worker": 1, "cpu_share": 0.4}]}
    busy_host = {"per_worker": [{"worker": 0, "cpu_share": 0.18}, {"worker": 1, "cpu_share": 0.19}]}
    assert remedy(busy_worker).startswith("more workers")
    assert remedy(busy_host).startswith("free cores or a quieter host, not more workers")


def test_workers_merge_from_raw_samples_not_averaged_percentiles() -> None:
    quiet = WorkerCheck(worker=0, loop_lag_s=[0.0001] * 99, cpu_s=0.5, wall_s=1.0, connections_max=3)
    busy = WorkerCheck(
        worker=1, loop_lag_s=[0.0001] * 90 + [0.005] * 10, cpu_s=0.9, wall_s=1.0, connections_max=4
    )
    block = report([quiet, busy], open_loop=False)
    every = quiet.loop_lag_s + busy.loop_lag_s
    assert block["loop_lag_ms"]["p99"] == round(percentile(every, 99) * 1000, 3)
    assert block["loop_lag_samples"] == 199
    assert block["cpu_share"] == [0.5, 0.9]
    assert block["open_connections_max"] == 7
    assert block["client_bound"] is True
    assert "worker 1 used 90% of a core > 85%" in block["evidence"]
    # Lateness counts only in open loop (a closed loop has no schedule to be late against).
    late = WorkerCheck(loop_lag_s=[0.0001] * 50, send_lateness_s=[0.01] * 50, cpu_s=0.1, wall_s=0.5)
    assert report([late], open_loop=False)["client_bound"] is False
    assert report([late], open_loop=True)["evidence"] == ["send lateness p99 10.0 ms > 2 ms"]


def test_a_loop_kept_off_its_core_is_flagged_by_the_probes_it_missed(
    scripted_server: ScriptedServer,
) -> None:
    """Issue 31: beside a hog that holds the core 150 ms at a time, the loop wakes a handful of
    times in a short closed-loop run (no send lateness to flag it, and a starved worker uses
    little CPU). Its few lag probes are no reason to say "kept up": the time they do not cover
    is the time it spent late."""
    with starved_on_one_core(hog=LONG_HOG):
        outcome = execute_load(
            engine(scripted_server),
            WorkloadSpec(input_len=16, output_len=64),
            LoadSpec(mode="concurrency", concurrency=8, requests=None, duration_s=0.8),
        )
    starved = outcome.generator
    assert starved["client_bound"] is True and starved["checked"] is True, starved
    assert starved["loop_late_share"] > 0.5, starved
    late = [line for line in starved["evidence"] if line.startswith("event loop late for")]
    assert late, starved["evidence"]
    assert f"{starved['loop_lag_samples']} lag probes in" in late[0]
    assert headline(starved).startswith("CLIENT-BOUND (")
    assert "throughput may be the generator's limit" in advice(starved)


def issue_31_check(**changes: float) -> WorkerCheck:
    """Issue 31's starved worker: 18 lag probes (p50 19 ms, p99 176 ms) in a 2.6 s closed loop
    at a quarter of a core."""
    fields = {"loop_lag_s": [0.019] * 17 + [0.176], "cpu_s": 0.65, "wall_s": 2.6, **changes}
    return WorkerCheck(**fields)  # type: ignore[arg-type]


def test_far_fewer_probes_than_the_run_allows_is_client_bound_with_the_figure() -> None:
    block = report([issue_31_check()], open_loop=False)
    # (2.6 s - 19 probes of 10 ms) / 2.6 s: 93% of the run the loop was not where it should be.
    assert block["loop_late_share"] == 0.927 and block["loop_lag_calm_samples"] == 260
    assert block["client_bound"] is True and block["checked"] is True
    assert block["evidence"] == [
        "event loop late for 93% of the run > 20% (18 lag probes in 2.60 s, a calm loop makes 260)"
    ]
    assert state(block) == "client-bound"
    assert headline(block).startswith("CLIENT-BOUND (event loop late for 93% of the run")
    # Several workers: the starved one is named, its figure is its own (the merged lag p99
    # flags the pool too, from the starved worker's few samples among the calm one's many).
    calm = WorkerCheck(worker=1, loop_lag_s=[0.0002] * 259, cpu_s=0.4, wall_s=2.6)
    pooled = report([issue_31_check(), calm], open_loop=False)
    assert [line for line in pooled["evidence"] if "late for" in line] == [
        (
            "worker 0's event loop late for 93% of the run > 20% (18 lag probes in 2.60 s, "
            "a calm loop makes 260)"
        )
    ]
    assert [w["late_share"] for w in pooled["per_worker"]] == [0.927, 0.0]


def test_a_run_too_short_to_tell_could_not_check_and_never_reads_kept_up() -> None:
    short = report([WorkerCheck(loop_lag_s=[0.0002] * 12, cpu_s=0.01, wall_s=0.13)], open_loop=False)
    assert short["client_bound"] is False and short["checked"] is False
    assert short["unchecked_reason"] == "the run lasted 0.13 s; the check needs at least 0.2 s"
    assert state(short) == "could not check"
    assert headline(short).startswith("could not check (the run lasted 0.13 s; the check needs")
    # Long enough, but its 18 probes do not fill the run by little enough to flag (9.5% late).
    few = report([WorkerCheck(loop_lag_s=[0.0002] * 18, cpu_s=0.02, wall_s=0.21)], open_loop=False)
    assert few["checked"] is False and few["evidence"] == []
    assert few["unchecked_reason"] == "only 18 loop-lag probes in 0.21 s; a verdict needs 20"
    # A block stored before the third state: its "kept up" on 18 probes reads as unchecked.
    stored = {"client_bound": False, "evidence": [], "loop_lag_samples": 18, "loop_lag_ms": {"p99": 0.3}}
    assert state(stored) == "could not check"
    assert headline(stored).startswith("could not check (only 18 loop-lag probes; a verdict needs 20)")
    assert state({}) is None and headline({}) is None


def test_enough_probes_and_little_lag_kept_up() -> None:
    calm = report([WorkerCheck(loop_lag_s=[0.0002] * 150, cpu_s=0.2, wall_s=1.52)], open_loop=False)
    assert calm["client_bound"] is False and calm["checked"] is True and calm["evidence"] == []
    assert "unchecked_reason" not in calm and calm["loop_late_share"] == 0.007
    assert state(calm) == "kept up"
    assert headline(calm).startswith(
        "generator kept up (1 worker(s)): loop lag p50/p99 0.200 ms/0.200 ms"
    )


def test_the_advice_says_which_figures_how_much_at_most_and_what_to_do() -> None:
    """Issue 36: a flagged run says which figures to distrust, by how much at most, and what
    to do, in plain words; the evidence (lag, lateness, CPU) stays in the headline."""
    lagging = report(
        [WorkerCheck(loop_lag_s=[0.0002] * 95 + [0.01242] * 5, cpu_s=0.02, wall_s=1.0)], open_loop=False
    )
    assert advice(lagging) == (
        "TTFT and ITL percentiles may be up to ~12.4 ms too high (the generator's own delay at p99: "
        "tokens that arrived while it was busy got late times); throughput and token counts are "
        "unaffected. What to do: run it again on a quieter machine (other programs, or the engine "
        "itself, kept the generator off its CPU); more workers would not help, none ran out of CPU."
    )
    busy = report([WorkerCheck(loop_lag_s=[0.0015] * 100, cpu_s=0.97, wall_s=1.0)], open_loop=False)
    assert advice(busy).startswith("TTFT and ITL percentiles may be up to ~1.5 ms too high")
    assert "; throughput may be the generator's limit, not the engine's (a worker ran out of CPU)" in (
        advice(busy)
    )
    assert "What to do: run it again with more load-generator workers (--workers N or auto" in advice(
        busy
    )
    starved = report([issue_31_check()], open_loop=False)
    assert advice(starved).startswith("TTFT and ITL percentiles may be up to ~149 ms too high")
    assert "(it was held up for 93% of the run)" in advice(starved)
    late = report(
        [WorkerCheck(loop_lag_s=[0.0001] * 50, send_lateness_s=[0.01] * 50, cpu_s=0.1, wall_s=0.5)],
        open_loop=True,
    )
    assert "requests left up to ~10.0 ms after their scheduled time (p99)" in advice(late)
    short = report([WorkerCheck(loop_lag_s=[0.0002] * 12, cpu_s=0.01, wall_s=0.13)], open_loop=False)
    assert advice(short).startswith("The load generator could not check itself (the run lasted 0.13 s")
    assert "What to do: run longer" in advice(short)
    calm = report([WorkerCheck(loop_lag_s=[0.0002] * 150, cpu_s=0.2, wall_s=1.52)], open_loop=False)
    assert advice(calm) == (
        "TTFT and ITL are the engine's: the generator's own delay was ~0.200 ms at p99."
    )
