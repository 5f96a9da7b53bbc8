"""Issue 8 on a real engine: llama.cpp killed in the middle of a benchmark and of a
recording. The benchmark ends "finished with errors" with every request stored; the
recording notes the engine down and picks it up again when it comes back."""

from __future__ import annotations

import os
import signal

import pytest
from sqlalchemy import func, select

from db.models import RequestResult, Sample
from db.session import session_scope
from services import local_engines
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec
from services.bench.workloads import WorkloadSpec
from services.engines import endpoints
from services.telemetry import recorder
from tests.support.waiting import wait_for

pytestmark = pytest.mark.engines


def _rows(run_id: int) -> int:
    with session_scope() as session:
        return session.scalar(
            select(func.count()).select_from(RequestResult).where(RequestResult.run_id == run_id)
        )


def _latest_sample(run_id: int) -> dict:
    with session_scope() as session:
        row = session.scalars(
            select(Sample).where(Sample.run_id == run_id).order_by(Sample.id.desc()).limit(1)
        ).first()
        return dict(row.values) if row else {}


def test_engine_killed_mid_benchmark_and_mid_recording(
    all_local_engines_up, db_url, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # A private llama.cpp on other ports, so the shared engines stay untouched.
    monkeypatch.setenv("SHOOTOUT_LOCAL_PORT_BASE", "18481")
    engine_id = "llamacpp-4slot"
    status = local_engines.start(engine_id, wait=True, register=endpoints.register_local)
    try:
        recording = recorder.begin_recording_run("engine dies", [engine_id], gpus=False, interval_s=0.5)
        spec = BenchSpec(
            engines=(jobs.engine_target(engine_id),),
            workload=WorkloadSpec(input_len=32, output_len=48),
            load=LoadSpec(concurrency=4, requests=200),
            timeout_s=30,
        )
        run_id = jobs.start_benchmark(spec)
        wait_for(lambda: _rows(run_id) >= 4, 120)
        os.kill(status.pid, signal.SIGKILL)
        view = wait_for(
            lambda: (v := jobs.get_run(run_id)).status not in jobs.ACTIVE_STATUSES and v, 120
        )
        assert view.status == "finished_with_errors", (view.status, view.error)
        block = view.summary["engines"][engine_id]
        assert block["completed"] >= 4
        assert block["completed"] + block["failed"] == block["sent"] == _rows(run_id) == 200
        assert set(block["errors_by_class"]) <= {"stream_cut", "connect_refused", "protocol_error"}, (
            block
        )
        # The recording saw it go down ...
        wait_for(lambda: "_error" in _latest_sample(recording.run_id), 30)
        # ... and picks it up again when it is back.
        local_engines.start(engine_id, wait=True, register=endpoints.register_local)
        wait_for(
            lambda: "_error" not in (s := _latest_sample(recording.run_id)) and "requests_running" in s,
            30,
        )
        recorder.stop_recording(recording.run_id)
    finally:
        local_engines.stop(engine_id)
