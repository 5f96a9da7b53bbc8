"""Issue 8: several users at once on one SQLite file. Two benchmarks (each in its own
worker process), a telemetry recording and a page-like reader run together: no "database
is locked", no lost rows (counted), completed + failed = sent."""

from __future__ import annotations

import threading
import time

from sqlalchemy import func, select

from db.models import RequestResult, Run, Sample
from db.session import session_scope
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.workloads import WorkloadSpec
from services.engines import endpoints
from services.runs import list_runs
from services.telemetry import recorder
from tests.support.scripted_server import ScriptedServer


def _spec(server: ScriptedServer, name: str, requests: int) -> BenchSpec:
    engine = EngineTarget(
        name=name,
        base_url=server.base_url,
        kind="vllm",
        model=server.model(ttft=5, itl=2, tokens=24),
        metrics_url=server.root_url + "/metrics",
    )
    return BenchSpec(
        engines=(engine,),
        workload=WorkloadSpec(input_len=16, output_len=24),
        load=LoadSpec(concurrency=16, requests=requests),
    )


def test_two_benchmarks_a_recording_and_readers_at_once(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    endpoints.add_engine(
        "watched",
        scripted_server.base_url,
        kind="vllm",
        model="scripted",
        metrics_url=scripted_server.root_url + "/metrics",
    )
    recording = recorder.begin_recording_run(
        "during two benchmarks", ["watched"], gpus=False, interval_s=0.2
    )
    first = jobs.start_benchmark(_spec(scripted_server, "user-a", 300))
    second = jobs.start_benchmark(_spec(scripted_server, "user-b", 300))
    read_errors: list[Exception] = []
    stop = threading.Event()

    def reader() -> None:  # a viewer whose page polls every 100 ms
        while not stop.is_set():
            try:
                list_runs()
                jobs.get_run(first)
            except Exception as error:  # noqa: BLE001 - collected and asserted
                read_errors.append(error)
            time.sleep(0.1)

    viewer = threading.Thread(target=reader)
    viewer.start()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if all(jobs.get_run(r).status not in jobs.ACTIVE_STATUSES for r in (first, second)):
            break
        time.sleep(0.5)
    stop.set()
    viewer.join()
    info = recorder.stop_recording(recording.run_id)
    assert read_errors == []
    for run_id, name in ((first, "user-a"), (second, "user-b")):
        view = jobs.get_run(run_id)
        assert view.status == "finished", (view.status, view.error)
        block = view.summary["engines"][name]
        assert (block["completed"], block["failed"], block["sent"]) == (300, 0, 300)
        with session_scope() as session:
            stored = session.scalar(
                select(func.count()).select_from(RequestResult).where(RequestResult.run_id == run_id)
            )
        assert stored == 300
    with session_scope() as session:
        samples = session.scalar(
            select(func.count()).select_from(Sample).where(Sample.run_id == recording.run_id)
        )
        status = session.get(Run, recording.run_id).status
    assert info is not None and samples > 0 and status == "finished"
