"""The generator's self-check: a starved worker is flagged client-bound with evidence, a
calm one is not, and several workers' reports merge from their raw samples."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from services.bench.arrivals import LoadSpec
from services.bench.runner import execute_load
from services.bench.selfcheck import WorkerCheck, headline, remedy, report
from services.bench.spec import EngineTarget
from services.bench.workloads import WorkloadSpec
from services.measure import percentile
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
def starved_on_one_core(hogs: int = 1) -> Iterator[None]:
    """This thread (the load's event loop) pinned to one core beside a process that takes
    half of that core in real-time bursts."""
    core = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    started = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(hogs)]
    try:
        for hog in started:
            os.sched_setaffinity(hog.pid, {core})
        os.sched_setaffinity(0, {core})
        yield
    finally:
        os.sched_setaffinity(0, before)
        for hog in started:
            hog.kill()
            hog.wait()


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
    late = WorkerCheck(loop_lag_s=[0.0001] * 50, send_lateness_s=[0.01] * 50, cpu_s=0.1, wall_s=1.0)
    assert report([late], open_loop=False)["client_bound"] is False
    assert report([late], open_loop=True)["evidence"] == ["send lateness p99 10.00 ms > 2 ms"]
