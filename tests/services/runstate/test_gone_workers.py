"""A worker that dies while the server runs (the OOM killer's SIGKILL) is noticed where runs are
counted, listed or drawn: its run is marked interrupted with its rows kept, and it stops holding
the server's limit (issue 44, item 9: it stayed "running" until the app restarted)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from db.models import RequestResult, Run
from db.session import session_scope
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.workloads import WorkloadSpec
from services.core.processes import worker_exited
from services.engines import endpoints
from services.parity import results as parity_results
from services.parity import runner as parity_runner
from services.parity.tasks import task_set
from services.runs import RunFilter, list_runs
from services.runstate import run_kinds
from services.team.access import Viewer
from services.tune import jobs as tune_jobs
from tests.support.scripted_server import ScriptedServer
from tests.support.waiting import wait_for

VIEWER = Viewer("viewer", "ip:10.0.0.7")


def _rows(run_id: int) -> int:
    with session_scope() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(RequestResult).where(RequestResult.run_id == run_id)
            )
            or 0
        )


def _kill_worker(run_id: int) -> None:
    with session_scope() as session:
        pid = session.get(Run, run_id).worker_pid
    assert pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: worker_exited(pid), timeout_s=10)


def _slow_benchmark(server: ScriptedServer) -> BenchSpec:
    return BenchSpec(
        engines=(
            EngineTarget(
                name="scripted",
                base_url=server.base_url,
                kind="vllm",
                model=server.model(ttft=5, itl=20, tokens=200),
            ),
        ),
        workload=WorkloadSpec(output_len=200),
        load=LoadSpec(concurrency=2, requests=400),
    )


def test_a_killed_benchmark_worker_frees_the_limit_at_once_and_keeps_its_rows(
    db_url: str, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOOTOUT_LIMIT_BENCHMARKS", "1")
    run_id = jobs.start_benchmark(_slow_benchmark(scripted_server), viewer=VIEWER)
    wait_for(lambda: _rows(run_id) >= 4)
    _kill_worker(run_id)
    # Counted at once, well inside the 30 s a silent heartbeat takes to go stale.
    assert run_kinds.count_active("benchmark") == 0
    view = jobs.get_run(run_id)
    assert view.status == "interrupted" and "process gone" in (view.error or "")
    block = view.summary["engines"]["scripted"]
    assert block["sent"] == _rows(run_id) >= 4  # the rows it stored are kept and summarised
    # The server's one benchmark place is free again: the next one is admitted.
    second = jobs.start_benchmark(_slow_benchmark(scripted_server), viewer=VIEWER)
    jobs.cancel_run(second)
    wait_for(lambda: not jobs.get_run(second).active, timeout_s=30)


def test_a_killed_parity_worker_shows_interrupted_when_drawn(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    for name in ("left", "right"):
        endpoints.add_engine(
            name, scripted_server.base_url, kind="vllm", model=scripted_server.model(ttft=5, itl=20)
        )
    run_id = parity_runner.start_parity(["left", "right"], tasks=task_set(60), max_tokens=16)
    wait_for(lambda: _rows(run_id) >= 2)
    _kill_worker(run_id)
    view = parity_results.parity_view(run_id)
    assert view.status == "interrupted" and "killed" in (view.error or "")
    assert _rows(run_id) >= 2


def _stored_run(kind: str, *, pid: int | None, beat_ago_s: float) -> int:
    with session_scope() as session:
        run = Run(
            kind=kind,
            name=kind,
            status="running",
            worker_pid=pid,
            heartbeat_at=datetime.now(UTC) - timedelta(seconds=beat_ago_s),
        )
        session.add(run)
        session.flush()
        return run.id


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_stale_heartbeat_is_noticed_while_listing_and_a_fresh_one_is_left_alone(db_url: str) -> None:
    """A worker on another host (or started before a restart) is known by its heartbeat only:
    a silent one is marked when the Runs page lists or Tune lists, a beating one never."""
    silent = _stored_run("tune", pid=_dead_pid(), beat_ago_s=120)
    beating = _stored_run("tune", pid=_dead_pid(), beat_ago_s=1)  # a pid not ours: not judged by it
    listed = {item.id: item.status for item in list_runs(RunFilter()).items}
    assert listed[silent] == "interrupted" and listed[beating] == "running"
    assert {i: s for i, _, s in tune_jobs.list_runs()}[beating] == "running"
    assert (
        tune_jobs.get_run(silent).error
        and "configurations measured so far" in tune_jobs.get_run(silent).error
    )
