"""Recording into the database, and reading it back: rows linked to the run, an engine that
disappears mid-recording and comes back, recording runs, windows and run replays."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from db.models import RequestResult, Run, Sample
from db.session import session_scope
from services.core.errors import NotFoundError, ValidationError
from services.telemetry import recorder as recorder_module
from services.telemetry.gpu import NvmlSampler
from services.telemetry.hub import TelemetryHub
from services.telemetry.monitor import recorded_view, run_timeline_figure
from services.telemetry.query import load_window, run_telemetry
from services.telemetry.recorder import (
    active_recordings,
    begin_recording_run,
    start_recording,
    stop_recording,
)
from services.telemetry.scraper import ScrapeTarget
from tests.services.telemetry.fake_pynvml import FakeGpu, make_fake_pynvml
from tests.services.telemetry.support import MetricsServer, Route, VllmLike
from tests.support.waiting import wait_for

LLAMACPP_TEXT = """# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total {prompt}
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total {predicted}
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 0
"""


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "pynvml", make_fake_pynvml(gpus=[FakeGpu()]))
    running = TelemetryHub(NvmlSampler())
    yield running
    for info in active_recordings():
        stop_recording(info.run_id)
    running.close()


def make_run(kind: str = "benchmark", started: datetime | None = None) -> int:
    with session_scope() as session:
        run = Run(kind=kind, name="t", status="running", started_at=started or datetime.now(UTC))
        session.add(run)
        session.flush()
        return run.id


def rows(run_id: int) -> list[tuple[float, str, dict]]:
    with session_scope() as session:
        return list(
            session.execute(
                select(Sample.ts, Sample.source, Sample.values)
                .where(Sample.run_id == run_id)
                .order_by(Sample.ts)
            )
        )


def test_records_engines_and_gpus_linked_to_the_run(db_url: str, hub: TelemetryHub) -> None:
    engine = VllmLike()
    with MetricsServer() as server:
        server.routes["/metrics"] = Route(body=engine.text)
        run_id = make_run()
        target = ScrapeTarget("v", "vllm", server.url + "/metrics", base_url=server.url)
        recording = start_recording(run_id, [target], gpus=True, interval_s=0.1, hub=hub)
        wait_for(lambda: recording.samples_written >= 6, 10)
        info = recording.stop()
    assert not info.running and info.samples_written >= 6
    stored = rows(run_id)
    sources = {source for _, source, _ in stored}
    assert sources == {"engine:v", "gpu:0"}
    engine_row = next(values for _, source, values in stored if source == "engine:v")
    assert engine_row["_kind"] == "vllm" and engine_row["_label"] == "vLLM"
    assert engine_row["requests_running"] == 0.0
    assert "spec_decode_acceptance" not in engine_row  # not exposed: absent, not 0
    gpu_row = next(values for _, source, values in stored if source == "gpu:0")
    assert gpu_row["gpu_memory_used_bytes"] == 10 * 2**30
    with session_scope() as session:
        assert session.get(Run, run_id).heartbeat_at is not None
        assert session.get(Run, run_id).status == "running"  # the benchmark owns its run's status


def test_a_last_sample_at_stop_reads_the_engine_afresh(db_url: str, hub: TelemetryHub) -> None:
    """A benchmark's recorder stops when its run ends: `last_sample` reads the engine at
    once (not a cached read, not a tick later), so a run shorter than a tick is closed too."""
    engine = VllmLike()
    with MetricsServer() as server:
        server.routes["/metrics"] = Route(body=engine.text)
        plain, closed = make_run(), make_run()
        for run_id in (plain, closed):
            # An engine of its own per run: the hub would hand the second run the first's read.
            target = ScrapeTarget(f"v{run_id}", "vllm", server.url + "/metrics", base_url=server.url)
            recording = start_recording(run_id, [target], gpus=False, interval_s=5.0, hub=hub)
            wait_for(lambda t=target: hub.scraper(t).last is not None, 10)
            engine.child(engine.generation).inc(40)
            started = time.monotonic()
            recording.stop(last_sample=run_id == closed)
            assert time.monotonic() - started < 1.0
    assert len(rows(plain)) == 1
    first, last = rows(closed)
    assert last[0] > first[0] and last[2]["generation_tokens_per_s"] > 0


def test_the_last_sample_skips_an_engine_whose_last_read_failed(db_url: str, hub: TelemetryHub) -> None:
    """A stalled engine has no window to close: reading it again at stop would hold the end
    of its benchmark for the whole read deadline (2 s here)."""

    def stalled() -> str:
        time.sleep(3)
        return ""

    with MetricsServer() as server:
        server.routes["/metrics"] = Route(body=stalled)
        target = ScrapeTarget("stalled", "vllm", server.url + "/metrics", base_url=server.url)
        recording = start_recording(make_run(), [target], gpus=False, interval_s=5.0, hub=hub)
        wait_for(lambda: getattr(hub.scraper(target).last, "error", None) is not None, 10)
        started = time.monotonic()
        recording.stop(last_sample=True)
        assert time.monotonic() - started < 1.0


def test_engine_disappears_mid_recording_and_comes_back(db_url: str, hub: TelemetryHub) -> None:
    engine = VllmLike(start_time=1.0)
    server = MetricsServer()
    server.routes["/metrics"] = Route(body=engine.text)
    server.start()
    run_id = make_run()
    target = ScrapeTarget("v", "vllm", server.url + "/metrics", base_url=server.url)
    hub.scraper(target).retry_after_s = 0.0
    recording = start_recording(run_id, [target], gpus=False, interval_s=0.1, hub=hub)
    try:
        engine.child(engine.generation).inc(1000)
        wait_for(lambda: len([r for r in rows(run_id) if "_error" not in r[2]]) >= 3, 10)
        server.stop()
        wait_for(lambda: any("_error" in r[2] for r in rows(run_id)), 10)
        engine.restart(start_time=2.0)
        engine.child(engine.generation).inc(10)
        server.start()
        wait_for(lambda: "_error" not in rows(run_id)[-1][2] and len(rows(run_id)) > 8, 10)
    finally:
        recording.stop()
        server.stop()
    stored = rows(run_id)
    errors = [values for _, _, values in stored if "_error" in values]
    assert errors and errors[0]["_error"].startswith("unreachable")
    assert all(set(values) == {"_kind", "_label", "_error"} for values in errors)  # no fake zeros
    rates = [
        v["generation_tokens_per_s"]
        for _, _, v in stored
        if v.get("generation_tokens_per_s") is not None
    ]
    assert rates and min(rates) >= 0
    first_error = next(i for i, (_, _, v) in enumerate(stored) if "_error" in v)
    assert any("_error" not in v for _, _, v in stored[first_error:])  # it came back


def test_recording_run_from_the_monitor_switch(db_url: str, hub: TelemetryHub) -> None:
    recording = begin_recording_run("", [], gpus=[0], interval_s=0.1, hub=hub)
    assert [i.run_id for i in active_recordings()] == [recording.run_id]
    with pytest.raises(ValidationError):
        start_recording(recording.run_id, [], gpus=True, hub=hub)
    wait_for(lambda: recording.samples_written >= 2, 10)
    info = stop_recording(recording.run_id)
    assert info is not None and not info.running
    assert active_recordings() == []
    assert stop_recording(recording.run_id) is None
    with session_scope() as session:
        run = session.get(Run, recording.run_id)
        assert run.kind == "recording" and run.status == "finished" and run.name.startswith("Recording ")
        assert run.summary["samples"] == info.samples_written
        assert run.finished_at is not None
        count = session.scalar(select(func.count()).select_from(Sample).where(Sample.run_id == run.id))
    assert count == info.samples_written


def test_recording_needs_a_source_and_an_existing_run(db_url: str, hub: TelemetryHub) -> None:
    with pytest.raises(ValidationError):
        begin_recording_run("x", [], gpus=False, hub=hub)
    with pytest.raises(NotFoundError):
        start_recording(999, [], gpus=True, hub=hub)
    with pytest.raises(NotFoundError):
        begin_recording_run("x", ["no-such-engine"], hub=hub)


def test_deleted_run_stops_its_recording(db_url: str, hub: TelemetryHub) -> None:
    run_id = make_run()
    recording = start_recording(run_id, [], gpus=True, interval_s=0.1, hub=hub)
    wait_for(lambda: recording.samples_written >= 1, 10)
    with session_scope() as session:
        session.execute(Sample.__table__.delete().where(Sample.run_id == run_id))
        session.delete(session.get(Run, run_id))
    wait_for(lambda: not recording.running, 10)
    assert "deleted" in (recording.last_error or "")
    assert run_id not in [i.run_id for i in recorder_module.active_recordings()]


def insert_samples(
    run_id: int | None, source: str, values: list[dict], t0: float, step: float = 1.0
) -> None:
    with session_scope() as session:
        session.add_all(
            Sample(run_id=run_id, ts=t0 + i * step, source=source, values=v)
            for i, v in enumerate(values)
        )


def test_load_window_frames_and_not_reported(db_url: str) -> None:
    llama = [
        {
            "_kind": "llamacpp",
            "_label": "llama.cpp",
            "requests_running": float(i),
            "prefix_cache_hit_rate": None,
        }
        for i in range(10)
    ]
    llama[4] = {"_kind": "llamacpp", "_label": "llama.cpp", "_error": "unreachable: connection refused"}
    insert_samples(None, "engine:l", llama, 100.0)
    insert_samples(
        None,
        "gpu:0",
        [
            {
                "_kind": "gpu",
                "_label": "H100",
                "gpu_utilization_pct": 50.0,
                "_processes": [{"pid": 1, "used_bytes": 5}],
            }
        ]
        * 10,
        100.0,
    )
    window = load_window(102.0, 106.0)
    assert window.sources == ["engine:l", "gpu:0"]
    engine = window.source_frame("engine:l")
    assert list(engine["ts"]) == [102.0, 103.0, 104.0, 105.0, 106.0]
    assert engine["requests_running"].isna().tolist() == [False, False, True, False, False]
    assert engine["_error"].iloc[2] == "unreachable: connection refused"
    assert window.not_reported["engine:l"]["kv_cache_usage"] == "not reported by llama.cpp"
    assert "prefix_cache_hit_rate" not in window.not_reported["engine:l"]  # exposed, just no data
    assert "gpu_utilization_pct" not in window.not_reported["gpu:0"]
    assert window.processes["gpu:0"] == [{"pid": 1, "used_bytes": 5}]
    assert load_window(102.0, 106.0, sources=["gpu:0"]).sources == ["gpu:0"]
    assert len(load_window(500.0, 600.0).frame) == 0


def test_run_replay_aligns_telemetry_with_requests(db_url: str) -> None:
    started = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    run_id = make_run(started=started)
    t0 = started.timestamp()
    insert_samples(
        run_id,
        "engine:v",
        [{"_kind": "vllm", "_label": "vLLM", "kv_cache_usage": 0.1 * i} for i in range(5)],
        t0,
    )
    with session_scope() as session:
        session.add_all(
            RequestResult(
                run_id=run_id, engine_name="v", index=i, start_s=float(i), ttft_s=0.1, e2e_s=1.0, ok=True
            )
            for i in range(3)
        )
    data = run_telemetry(run_id)
    assert data.t0 == t0
    assert list(data.window.frame["t_s"]) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert list(data.requests["start_s"]) == [0.0, 1.0, 2.0]
    figure, notes = run_timeline_figure(run_id)
    names = [trace.name for trace in figure.data]
    assert "v · E2E" in names and "v · KV-cache usage" in names
    # only KV usage was stored for this source: the other timeline signals say so
    assert notes == ["v: Running, Waiting, Generated tokens/s not reported by vLLM"]
    view = recorded_view(run_id)
    assert next(c.key for c in view.charts).startswith(f"recorded_{run_id}_")
    kv_chart = next(c for c in view.charts if c.key.endswith("kv_cache"))
    assert kv_chart.has_data


def test_recorded_view_shows_one_hour_of_a_long_recording(db_url: str) -> None:
    started = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
    run_id = make_run(kind="recording", started=started)
    t0 = started.timestamp()
    insert_samples(
        run_id,
        "gpu:0",
        [{"_kind": "gpu", "_label": "H100", "gpu_utilization_pct": 1.0}] * 361,
        t0,
        step=30.0,
    )
    from services.telemetry.monitor import recorded_view, recording_span

    assert recording_span(run_id) == (t0, t0 + 3 * 3600)
    latest = recorded_view(run_id)
    assert latest.span == (t0, t0 + 3 * 3600) and latest.window == (t0 + 2 * 3600, t0 + 3 * 3600)
    earliest = recorded_view(run_id, end_ts=t0 + 3600)
    assert earliest.window == (t0, t0 + 3600)
    assert earliest.statuses[0].message == "121 sample(s) in the window"
    assert recorded_view(make_run()).span is None


@pytest.mark.postgres
def test_recording_and_windows_on_both_databases(any_db_url: str, hub: TelemetryHub) -> None:
    run_id = make_run()
    recording = start_recording(run_id, [], gpus=True, interval_s=0.1, hub=hub)
    wait_for(lambda: recording.samples_written >= 3, 10)
    recording.stop()
    llama = [
        {
            "_kind": "llamacpp",
            "_label": "llama.cpp",
            "requests_running": 1.0,
            "prefix_cache_hit_rate": None,
        }
    ] * 3
    insert_samples(run_id, "engine:l", llama, time.time() - 10)
    window = load_window(run_id=run_id, sources=["engine:l", "gpu:0"])
    assert window.sources == ["engine:l", "gpu:0"]
    assert window.source_frame("gpu:0")["gpu_memory_used_bytes"].iloc[0] == 10 * 2**30
    assert window.not_reported["engine:l"]["kv_cache_usage"] == "not reported by llama.cpp"
    assert "prefix_cache_hit_rate" not in window.not_reported["engine:l"]


def test_replay_puts_each_engine_requests_on_the_run_clock(db_url: str) -> None:
    started = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    t0 = started.timestamp()
    run_id = make_run(started=started)
    with session_scope() as session:
        run = session.get(Run, run_id)
        # engines measured one after another, each request time relative to its own start
        run.summary = {
            "engines": {"a": {"started_at_unix": t0 + 1}, "b": {"started_at_unix": t0 + 60}},
            "sweep": [{"engine": "a", "step": 2, "started_at_unix": t0 + 30}],
        }
        session.add_all(
            [
                RequestResult(run_id=run_id, engine_name="a", index=0, start_s=0.5, ok=True),
                RequestResult(run_id=run_id, engine_name="b", index=0, start_s=0.5, ok=True),
                RequestResult(
                    run_id=run_id, engine_name="a", index=1, start_s=0.5, ok=True, extra={"step": 2}
                ),
                RequestResult(run_id=run_id, engine_name="c", index=0, start_s=0.5, ok=True),
            ]
        )
    requests = run_telemetry(run_id).requests
    assert list(requests["start_s"]) == [
        1.5,
        30.5,
        60.5,
        0.5,
    ]  # a, a (step 2), b, c (no origin: run start)


def test_a_replay_draws_no_empty_rows(db_url: str) -> None:
    """Issue 56: a run with telemetry and no requests (a recording) drew an empty "Request
    latency" box above its signals; one with neither drew an empty figure."""
    started = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    recording = make_run(kind="recording", started=started)
    insert_samples(
        recording,
        "engine:v",
        [{"_kind": "vllm", "_label": "vLLM", "kv_cache_usage": 0.1 * i} for i in range(5)],
        started.timestamp(),
    )
    figure, notes = run_timeline_figure(recording)
    assert figure is not None
    titles = [a.text for a in figure.layout.annotations]
    assert titles == ["KV-cache usage (%)"] and "This run has no request results." in notes
    assert {trace.yaxis for trace in figure.data} == {"y"}  # every row drawn holds a trace
    empty = make_run(kind="recording", started=started)
    figure, notes = run_timeline_figure(empty)
    assert figure is None and "No telemetry was recorded with this run." in notes
