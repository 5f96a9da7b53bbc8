"""Several load-generator processes on one host: the same load shape as one process, exact
merging, a shared budget, cancel, and a run stored through the job service."""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path

import pytest

from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.pool import auto_workers, split
from services.bench.pool.plan import RAY_TAKE_MOST, TAKE_MOST, take_batch
from services.bench.runner import ListSink, execute_load
from services.bench.spec import WORKERS_AUTO, BenchSpec, EngineTarget
from services.bench.stats import summarize_engine
from services.bench.workloads import WorkloadSpec
from tests.support.scripted_server import ScriptedServer, log_id_header, scripted_engine, timing_errors


def test_closed_loop_over_two_workers_holds_the_total_and_merges_exactly(
    scripted_server: ScriptedServer,
) -> None:
    sink = ListSink()
    outcome = execute_load(
        scripted_engine(scripted_server),
        WorkloadSpec(input_len=8, output_len=16),
        LoadSpec(concurrency=6, requests=60, warmup_requests=4),
        workers=2,
        sink=sink,
    )
    summary = summarize_engine(outcome.records, fixed_output=True)
    assert (summary["sent"], summary["completed"], summary["failed"], summary["warmup"]) == (
        60,
        60,
        0,
        4,
    )
    # One budget: each conversation of the coordinator's sequence ran once, none twice.
    assert sorted(r.index for r in outcome.measured) == list(range(60))
    assert summary["concurrency_max"] <= 6
    assert len(sink.records) == len(outcome.records) == 64
    generator = outcome.generator
    assert generator["workers"] == 2 and len(generator["cpu_share"]) == 2
    assert generator["loop_lag_samples"] == sum(len(check.loop_lag_s) for check in outcome.checks)


def test_closed_loop_claims_as_it_takes_and_the_budget_stays_exact_over_many_turns(
    scripted_server: ScriptedServer,
) -> None:
    """Workers take a few conversations at a time, each claimed as taken; later turns claim
    when due. Three-turn conversations over 11 requests: exactly 11 sent, the first turns
    are the sequence's first ones, no conversation ran twice."""
    outcome = execute_load(
        scripted_engine(scripted_server, ttft=2, itl=1, tokens=4),
        WorkloadSpec(kind="multi_turn", turns=3, input_len=8, output_len=4),
        LoadSpec(concurrency=8, requests=11),
        workers=2,
    )
    summary = summarize_engine(outcome.records, fixed_output=True)
    assert (summary["sent"], summary["completed"], summary["failed"]) == (11, 11, 0)
    assert len({r.index for r in outcome.measured}) == 11


def test_as_many_streams_as_requests_are_all_in_flight_at_once(
    scripted_server: ScriptedServer,
) -> None:
    """A worker takes no more conversations than it has slots waiting: none is held for a
    busy slot while the other worker's slots stand idle."""
    outcome = execute_load(
        scripted_engine(scripted_server, ttft=1500, itl=1, tokens=2),
        WorkloadSpec(input_len=8, output_len=2),
        LoadSpec(concurrency=400, requests=400),
        workers=2,
    )
    summary = summarize_engine(outcome.records, fixed_output=True)
    assert (summary["sent"], summary["completed"]) == (400, 400)
    assert summary["concurrency_max"] == 400


def test_worker_timings_match_the_servers_own_record(scripted_server: ScriptedServer) -> None:
    """Request headers travel to the workers; with them the server logs each request, and what
    a worker measured lines up with the server's writes (one monotonic clock on a host)."""
    outcome = execute_load(
        scripted_engine(scripted_server, ttft=30, itl=5, tokens=8),
        WorkloadSpec(input_len=8, output_len=8),
        LoadSpec(concurrency=4, requests=24),
        workers=2,
        request_headers=functools.partial(log_id_header, "pool-"),
    )
    assert len(outcome.measured) == 24
    # Also checks that each record has one gap per write after the first.
    ttft_errors, _ = timing_errors(scripted_server, outcome, "pool-")
    # When the server wrote it (it takes its time just after the write, so the client may read
    # the bytes a little before), give or take the reading on a loaded VM.
    assert len(ttft_errors) == 24 and all(-0.002 < error < 0.05 for error in ttft_errors)


@pytest.mark.parametrize(
    ("load", "work"),
    [
        (
            LoadSpec(
                mode="rate",
                rate=80,
                arrival="gamma",
                burstiness=0.5,
                concurrency=None,
                requests=60,
                seed=7,
            ),
            WorkloadSpec(input_len=8, output_len=8),
        ),
        # A real trace's arrival times, sped up (its lengths scaled down to keep the run short).
        (
            LoadSpec(mode="trace", trace_speed=40, concurrency=None, requests=60),
            WorkloadSpec(kind="trace", trace="conversation", length_scale=0.01, output_len=8),
        ),
    ],
    ids=["gamma", "trace"],
)
def test_open_loop_keeps_the_coordinators_schedule(
    scripted_server: ScriptedServer, load: LoadSpec, work: WorkloadSpec
) -> None:
    alone = execute_load(scripted_engine(scripted_server, tokens=8), work, load, salt="same")
    pooled = execute_load(scripted_engine(scripted_server, tokens=8), work, load, salt="same", workers=2)

    def schedule(outcome) -> dict[int, float]:
        first = min(r.scheduled_s for r in outcome.measured)
        return {r.index: round(r.scheduled_s - first, 9) for r in outcome.measured}

    # The same requests at the same instants (relative to the first arrival), whichever worker sent them.
    assert schedule(pooled) == schedule(alone)
    assert len(pooled.measured) == 60 and all(r.ok for r in pooled.measured)
    lateness = pooled.generator["send_lateness_ms"]
    assert lateness and len([x for c in pooled.checks for x in c.send_lateness_s]) == 60
    # The requests really left at their instants: start follows the schedule closely.
    late = sorted(r.start_s - r.scheduled_s for r in pooled.measured)
    assert late[len(late) // 2] < 0.005


def test_cancel_reaches_every_worker_and_nothing_is_lost(scripted_server: ScriptedServer) -> None:
    stop = threading.Event()
    threading.Timer(2.5, stop.set).start()
    began = time.monotonic()
    outcome = execute_load(
        scripted_engine(scripted_server, itl=50, tokens=400),
        WorkloadSpec(input_len=8, output_len=400),
        LoadSpec(concurrency=4, requests=None, duration_s=120),
        workers=2,
        should_stop=stop.is_set,
    )
    assert time.monotonic() - began < 20
    assert outcome.cancelled
    summary = summarize_engine(outcome.records, fixed_output=True)
    assert summary["cancelled_requests"] == 4
    assert summary["completed"] + summary["failed"] + summary["cancelled_requests"] == summary["sent"]


def test_a_stored_run_with_two_workers(db_url: str, scripted_server: ScriptedServer) -> None:
    spec = BenchSpec(
        engines=(scripted_engine(scripted_server),),
        workload=WorkloadSpec(input_len=8, output_len=16),
        load=LoadSpec(concurrency=4, requests=30),
        workers=2,
        record_engine_metrics=False,
        calibrate_prompts=False,
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    block = summary["engines"]["scripted"]
    assert (block["sent"], block["completed"]) == (30, 30)
    assert block["generator"]["workers"] == 2
    assert summary["generator"]["checked_loads"] == 1
    assert len(jobs.load_records(run_id)) == 30
    assert jobs.get_run(run_id).status == "finished"


def test_split_and_auto() -> None:
    assert split(7, 3) == [3, 2, 2] and sum(split(4096, 5)) == 4096
    assert auto_workers(LoadSpec(concurrency=8)) == 1
    bound = {"client_bound": True, "cpu_share": [0.95]}
    grown = auto_workers(LoadSpec(concurrency=8), bound, 1)
    assert grown >= 1 and (grown > 1 or len(__import__("os").sched_getaffinity(0)) == 1)
    assert auto_workers(LoadSpec(concurrency=8), {"client_bound": False}, 3) == 3
    # A step that could not be checked is no reason for more workers.
    unchecked = {"client_bound": False, "checked": False, "cpu_share": [0.01], "loop_lag_samples": 5}
    assert auto_workers(LoadSpec(concurrency=8), unchecked, 3) == 3


def test_a_take_through_rays_hub_holds_twice_the_slots_and_a_local_one_a_quarter() -> None:
    # A hub round trip costs milliseconds of CPU: the fewer the cheaper, up to the cap.
    assert [take_batch(slots, RAY_TAKE_MOST, True) for slots in (1, 16, 64, 200)] == [2, 32, 128, 128]
    assert [take_batch(slots, TAKE_MOST, False) for slots in (1, 16, 64, 200)] == [1, 4, 16, 32]


def test_workers_are_validated() -> None:
    from services.core.errors import ValidationError

    with pytest.raises(ValidationError, match="Workers must be 1 to 64, or auto"):
        BenchSpec(engines=(EngineTarget("a", "http://127.0.0.1:1"),), workers=65).validate()
    assert BenchSpec(engines=(EngineTarget("a", "http://127.0.0.1:1"),), workers=WORKERS_AUTO).validate()


ORPHANING = """
import sys
from services.bench.arrivals import LoadSpec
from services.bench.runner import execute_load
from services.bench.spec import EngineTarget
from services.bench.workloads import WorkloadSpec
if __name__ == "__main__":
    target = EngineTarget(name="s", base_url=sys.argv[1], kind="vllm", model=sys.argv[2])
    execute_load(target, WorkloadSpec(input_len=8, output_len=400), LoadSpec(concurrency=4, requests=None,
                 duration_s=300), workers=2)
"""


def test_workers_of_a_killed_coordinator_stop(scripted_server: ScriptedServer, tmp_path) -> None:
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    script = tmp_path / "orphaning.py"
    script.write_text(ORPHANING)
    coordinator = subprocess.Popen(
        [
            sys.executable,
            str(script),
            scripted_server.base_url,
            scripted_server.model(ttft=5, itl=50, tokens=400),
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )

    def workers() -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == coordinator.pid:
                    found.append(int(entry))
        return found

    deadline = time.monotonic() + 60
    while len(workers()) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    children = workers()
    assert len(children) >= 2
    time.sleep(3)  # well into the measured phase
    coordinator.send_signal(signal.SIGKILL)
    coordinator.wait()
    deadline = time.monotonic() + 15
    alive = children
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [
            pid
            for pid in children
            if os.path.exists(f"/proc/{pid}")
            and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        ]
    assert alive == [], "orphaned workers went on loading the engine"


def test_a_sweep_with_workers_and_with_auto(db_url: str, scripted_server: ScriptedServer) -> None:
    from services.bench.spec import SweepSpec

    for workers in (2, WORKERS_AUTO):
        spec = BenchSpec(
            engines=(scripted_engine(scripted_server, tokens=8),),
            workload=WorkloadSpec(input_len=8, output_len=8),
            load=LoadSpec(requests=12),
            workers=workers,
            record_engine_metrics=False,
            calibrate_prompts=False,
            sweep=SweepSpec(kind="concurrency", values=(2, 4), stop_on_plateau=False),
        )
        summary = jobs.execute_run(jobs.create_run(spec))
        rows = summary["sweep"]
        assert [row["completed"] for row in rows] == [12, 12]
        counts = [row["generator"]["workers"] for row in rows]
        # auto starts with one worker at these loads (and grows only after a client-bound step).
        assert counts == [2, 2] if workers == 2 else counts[0] == 1


class _RecordingQueue:
    def __init__(self) -> None:
        self.items: list = []

    def put(self, item, timeout=None) -> None:
        self.items.append(item)


def test_the_feeder_hands_lists_far_from_the_budgets_end_and_single_ones_near_it() -> None:
    """Far from the end a list costs one pickling and one pipe write (a worker takes it whole
    and claims it at once); the last `closed_loop_reserve` requests go one by one, so no
    worker holds claimed conversations for busy slots at the end; no more conversations are
    drawn than the budget's requests."""
    from services.bench.load import LoadJob
    from services.bench.pool import Coordination
    from services.bench.pool.plan import FEED_CHUNK, closed_loop_reserve

    load = LoadSpec(concurrency=4, requests=500)
    job = LoadJob(
        EngineTarget(name="x", base_url="http://127.0.0.1:9/v1", kind="vllm"),
        WorkloadSpec(input_len=8, output_len=1),
        load,
        sink=ListSink(),
    )
    channels = type("Channels", (), {"work": _RecordingQueue(), "stop": threading.Event()})()
    Coordination(job, workers=2).feed_closed(channels, threading.Event())
    items = channels.work.items
    lists = [item for item in items if isinstance(item, list)]
    singles = [item for item in items if not isinstance(item, list)]
    in_lists = 500 - closed_loop_reserve(load, 2)
    assert sum(len(item) for item in lists) == in_lists and {len(item) for item in lists[:-1]} == {
        FEED_CHUNK
    }
    assert len(singles) == 500 - in_lists
    flat = [c for item in items for c in (item if isinstance(item, list) else [item])]
    assert [c.id for c in flat] == list(range(500))


@pytest.mark.parametrize(("turns", "requests"), [(1, 500), (3, 301)], ids=["single-turn", "three-turn"])
def test_a_run_handed_in_lists_stays_exact(
    scripted_server: ScriptedServer, turns: int, requests: int
) -> None:
    """Most of these budgets go out in lists: still exactly `requests` sent, each request once,
    the first turns the sequence's first conversations, the total concurrency held."""
    kind = {"kind": "multi_turn", "turns": turns} if turns > 1 else {}
    outcome = execute_load(
        scripted_engine(scripted_server, ttft=0, itl=0, tokens=1),
        WorkloadSpec(input_len=8, output_len=1, **kind),
        LoadSpec(concurrency=4, requests=requests),
        workers=2,
    )
    summary = summarize_engine(outcome.records, fixed_output=True)
    assert (summary["sent"], summary["completed"], summary["failed"]) == (requests, requests, 0)
    indices = [r.index for r in outcome.measured]
    assert len(set(indices)) == requests
    # Request indices count turns in the sequence's order: conversation k holds k*turns...
    conversations = sorted({index // turns for index in indices})
    assert conversations == list(range(len(conversations)))
    assert summary["concurrency_max"] <= 4
