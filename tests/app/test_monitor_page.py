"""The Monitor page in AppTest: no-GPU state, live charts with "not reported by" notes,
the recording switch, recorded replays."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from db.models import Run, Sample
from db.session import session_scope
from services.engines import endpoints
from services.telemetry.gpu import NvmlSampler
from services.telemetry.recorder import active_recordings, stop_recording
from tests.conftest import REPO_ROOT
from tests.services.telemetry.fake_pynvml import FakeGpu, NVMLError_LibraryNotFound, make_fake_pynvml
from tests.services.telemetry.support import MetricsServer, Route, VllmLike
from tests.support.markdown import as_read
from tests.support.prometheus import SAMPLES_ORIGIN
from tests.support.telemetry_hub import reset_hub


def monitor_page() -> AppTest:
    return AppTest.from_file(str(REPO_ROOT / "app_pages" / "monitor.py"), default_timeout=60)


@pytest.fixture
def engines(db_url: str, shared_dir: Path) -> Iterator[MetricsServer]:
    """A vLLM-like and a llama.cpp-like endpoint on loopback, registered."""
    vllm = VllmLike()
    vllm.child(vllm.kv).set(0.25)
    with MetricsServer() as server:
        server.routes["/v/metrics"] = Route(body=vllm.text)
        server.routes["/l/metrics"] = Route(
            body=(shared_dir / "fixtures/metrics/llamacpp.txt").read_text()
        )
        endpoints.add_engine(
            "vllm-a", server.url + "/v", kind="vllm", metrics_url=server.url + "/v/metrics"
        )
        endpoints.add_engine(
            "llama-b", server.url + "/l", kind="llamacpp", metrics_url=server.url + "/l/metrics"
        )
        yield server
        for info in active_recordings():
            stop_recording(info.run_id)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(sys.modules, "pynvml", make_fake_pynvml(init_error=NVMLError_LibraryNotFound))
    reset_hub(gpu_sampler=NvmlSampler())
    yield
    reset_hub()


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(
        sys.modules, "pynvml", make_fake_pynvml(gpus=[FakeGpu(), FakeGpu(name="NVIDIA L4")])
    )
    reset_hub(gpu_sampler=NvmlSampler())
    yield
    reset_hub()


def charts(at: AppTest) -> list:
    return at.get("plotly_chart")


def captions(at: AppTest) -> str:
    return "\n".join(as_read(c.value) for c in at.caption)


def test_no_engines_no_gpu(db_url: str, no_gpu: None) -> None:
    at = monitor_page().run()
    assert not at.exception
    assert any(i.value.startswith("no NVIDIA GPU here") for i in at.info)
    assert any("Choose engines" in i.value for i in at.info)
    assert charts(at) == []


def test_live_charts_and_not_reported(engines: MetricsServer, no_gpu: None) -> None:
    at = monitor_page().run()
    assert not at.exception, at.exception
    assert at.multiselect(key="monitor_engines").value == ["llama-b", "vllm-a"]
    assert len(charts(at)) == 5  # KV, hit rate, queue, tokens, latency (no GPU charts without GPUs)
    text = captions(at)
    assert "llama-b: not reported by llama.cpp" in text  # KV-cache usage
    assert "vllm-a" in text and "llama-b" in text  # status line per engine
    assert [request[1]["accept"] for request in engines.requests] == ["text/plain"] * len(
        engines.requests
    )


def test_gpus_listed_and_charted(engines: MetricsServer, two_gpus: None) -> None:
    at = monitor_page().run()
    assert not at.exception, at.exception
    gpus = at.multiselect(key="monitor_gpus")
    assert gpus.value == ["gpu:0", "gpu:1"]
    assert len(charts(at)) == 7
    at.multiselect(key="monitor_engines").set_value([]).run()
    assert len(charts(at)) == 2  # GPU memory and utilisation


def test_recording_switch_creates_and_finishes_a_run(engines: MetricsServer, two_gpus: None) -> None:
    at = monitor_page().run()
    at.text_input(key="monitor_record_name").set_value("load test A")
    at.toggle(key="monitor_record").set_value(True).run()
    assert not at.exception, at.exception
    assert not at.error
    with session_scope() as session:
        run = session.scalars(select(Run).where(Run.kind == "recording")).one()
        assert run.name == "load test A" and run.status == "running"
        assert run.engine_names == "llama-b,vllm-a"
    assert "Recording into run" in captions(at)
    time.sleep(2.5)
    at.toggle(key="monitor_record").set_value(False).run()
    assert not at.exception
    with session_scope() as session:
        run = session.scalars(select(Run).where(Run.kind == "recording")).one()
        assert run.status == "finished"
        sources = set(session.scalars(select(Sample.source).where(Sample.run_id == run.id)))
    assert sources == {"engine:llama-b", "engine:vllm-a", "gpu:0", "gpu:1"}
    # and the replay
    at.segmented_control(key="monitor_mode").set_value("Recorded").run()
    assert not at.exception, at.exception
    assert len(charts(at)) == 7
    assert "llama-b: not reported by llama.cpp" in captions(at)


def test_recording_error_is_shown_not_raised(db_url: str, no_gpu: None) -> None:
    at = monitor_page().run()
    at.toggle(key="monitor_record").set_value(True).run()
    assert not at.exception
    assert any("Choose at least one engine or GPU" in e.value for e in at.error)
    assert at.toggle(key="monitor_record").value is False


def test_long_recording_is_shown_an_hour_at_a_time(db_url: str, no_gpu: None) -> None:
    from datetime import datetime, timedelta

    start = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
    with session_scope() as session:
        run = Run(
            kind="recording", name="three hours", status="finished", started_at=start, engine_names="x"
        )
        session.add(run)
        session.flush()
        run_id = run.id
        session.add_all(
            Sample(
                run_id=run_id,
                ts=start.timestamp() + t,
                source="engine:x",
                values={"_kind": "vllm", "_label": "vLLM", "kv_cache_usage": (t % 3600) / 3600},
            )
            for t in range(0, 3 * 3600 + 1, 30)
        )
    at = monitor_page()
    at.session_state["monitor_mode"] = "Recorded"
    at.run()
    assert not at.exception, at.exception
    slider = at.slider(key=f"monitor_recorded_end_{run_id}")
    assert slider.value == start + timedelta(hours=3)
    kv = charts(at)[0]
    assert kv is not None
    slider.set_value(start + timedelta(hours=1)).run()
    assert not at.exception, at.exception
    assert at.slider(key=f"monitor_recorded_end_{run_id}").value == start + timedelta(hours=1)
    assert len(charts(at)) == 5


def _benchmark_with_samples(name: str, start_ts: float, seconds: int, source: str) -> int:
    """A benchmark run whose recorder (in its worker) stored engine samples, one a second."""
    from datetime import datetime

    with session_scope() as session:
        run = Run(
            kind="benchmark",
            name=name,
            status="finished",
            started_at=datetime.fromtimestamp(start_ts, UTC),
            engine_names=source.partition(":")[2],
        )
        session.add(run)
        session.flush()
        session.add_all(
            Sample(
                run_id=run.id,
                ts=start_ts + t,
                source=source,
                values={"_kind": "vllm", "_label": "vLLM", "kv_cache_usage": 0.9},
            )
            for t in range(seconds)
        )
        return run.id


def _trace_points(at: AppTest, title: str, trace: str) -> list[str]:
    for chart in charts(at):
        figure = json.loads(chart.proto.spec)
        if figure["layout"]["title"]["text"] == title:
            return next(t["x"] for t in figure["data"] if t["name"] == trace)
    raise AssertionError(f"no chart {title!r}")


def test_live_starts_from_what_was_already_sampled(engines: MetricsServer, no_gpu: None) -> None:
    """Issue 36: Live held only samples taken since the page opened, under a 5-minute axis, so a
    benchmark two minutes earlier was absent."""
    _benchmark_with_samples("earlier", time.time() - 120, 100, "engine:vllm-a")
    at = monitor_page().run()
    assert not at.exception, at.exception
    points = _trace_points(at, "KV-cache usage", "vllm-a")
    assert len(points) >= 101  # the benchmark's 100 stored samples, then this page's own
    at.selectbox(key="monitor_window").set_value(60).run()  # the window still bounds them
    assert 1 <= len(_trace_points(at, "KV-cache usage", "vllm-a")) < 70


def test_recorded_lists_a_benchmarks_recording(db_url: str, no_gpu: None) -> None:
    """Issue 36: Recorded said "No recordings yet" though benchmark runs record engine metrics."""
    run_id = _benchmark_with_samples("bench A", time.time() - 600, 60, "engine:x")
    with session_scope() as session:
        session.add(Run(kind="benchmark", name="nothing recorded", status="finished"))
    at = monitor_page()
    at.session_state["monitor_mode"] = "Recorded"
    at.run()
    assert not at.exception, at.exception
    assert not any("No recordings yet" in i.value for i in at.info)
    options = at.selectbox(key="monitor_recorded_run").options
    assert options == [f"#{run_id} bench A (benchmark, finished; x)"]
    assert len(charts(at)) == 5


def test_history_from_the_real_prometheus(db_url: str, no_gpu: None, prometheus: str) -> None:
    endpoints.add_engine(
        "resetting", SAMPLES_ORIGIN, kind="vllm", metrics_url=SAMPLES_ORIGIN + "/resetting"
    )
    at = monitor_page()
    at.session_state["monitor_mode"] = "History"
    at.run()
    assert not at.exception
    assert any("Prometheus server" in i.value for i in at.info)
    at.text_input(key="monitor_prometheus_url").set_value(prometheus).run()
    at.text_input(key="monitor_prometheus_selector").set_value('namespace="shootout-test"').run()
    assert not at.exception, at.exception
    keys = [chart.proto.id for chart in charts(at)]
    assert len(keys) == 10, keys  # 2 GPU, 5 engine charts and the TTFT/ITL/E2E percentiles
    text = captions(at)
    assert "gpu-node-07/0" in text and "resetting" in text and "scrape target" in text
    assert "not reported by vLLM" in text  # the resetting engine has no ITL histogram
    at.text_input(key="monitor_prometheus_selector").set_value("up) or (1").run()
    assert not at.exception
    assert any("label matchers" in e.value for e in at.error)
    at.text_input(key="monitor_prometheus_selector").set_value("").run()
    at.text_input(key="monitor_prometheus_url").set_value("http://127.0.0.1:9").run()
    assert not at.exception
    assert any("connection refused" in e.value for e in at.error)


def test_an_engine_that_refuses_connections_is_unreachable_not_a_green_tick(
    engines: MetricsServer, no_gpu: None
) -> None:
    """Issue 56: an engine of a kind without metrics (nothing to scrape) whose URL refused
    connections showed a green tick and "not reported"; one that answers keeps its tick."""
    endpoints.add_engine("dead", "http://127.0.0.1:9", kind="openai")
    endpoints.add_engine("alive", engines.url + "/o", kind="openai")
    at = monitor_page()
    at.session_state["monitor_engines"] = ["dead", "alive"]
    at.run()
    assert not at.exception, at.exception
    lines = {name: c.value for c in at.caption for name in ("dead", "alive") if f"**{name}**" in c.value}
    assert ":material/cloud_off:" in lines["dead"] and "unreachable" in lines["dead"], lines
    assert "check_circle" not in lines["dead"]
    assert ":material/check_circle:" in lines["alive"] and "not reported" in lines["alive"], lines


def test_a_dcgm_url_urllib_cannot_split_is_an_error_box(db_url: str, no_gpu: None) -> None:
    """Issue 56's URL class on the page: `http://[::1` in the dcgm-exporter field raised
    urllib's ValueError through the page (a redacted exception box)."""
    at = monitor_page().run()
    at.text_input(key="monitor_dcgm").set_value("http://[::1").run()
    assert not at.exception, at.exception
    assert any("is not a valid dcgm-exporter URL" in as_read(e.value) for e in at.error)
