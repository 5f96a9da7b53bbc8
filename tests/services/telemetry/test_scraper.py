"""One scraper per endpoint over real HTTP on loopback: headers, errors, an engine that
disappears and comes back restarted, trtllm-serve's JSON fallback, the shared hub."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from services.telemetry.gpu import NullGpuSampler, NvmlSampler
from services.telemetry.hub import TelemetryHub
from services.telemetry.scraper import EngineScraper, ScrapeTarget
from tests.services.telemetry.fake_pynvml import FakeGpu, make_fake_pynvml
from tests.services.telemetry.support import MetricsServer, Route, VllmLike


@pytest.fixture
def server():  # type: ignore[no-untyped-def]
    with MetricsServer() as running:
        yield running


def target(server: MetricsServer, kind: str = "vllm", path: str = "/metrics") -> ScrapeTarget:
    return ScrapeTarget("e1", kind, server.url + path, base_url=server.url)


def test_scrape_sends_accept_text_plain_and_normalises(server: MetricsServer) -> None:
    engine = VllmLike()
    server.routes["/metrics"] = Route(body=engine.text)
    scraper = EngineScraper(target(server))
    engine.child(engine.running).set(3)
    first = scraper.scrape(now=10.0)
    assert first.error is None and first.values["requests_running"] == 3
    engine.child(engine.generation).inc(50)
    second = scraper.scrape(now=12.0)
    assert second.values["generation_tokens_per_s"] == pytest.approx(25.0)
    assert server.requests[-1][1]["accept"] == "text/plain"
    assert second.source == "engine:e1" and second.label == "vLLM"
    scraper.close()


def test_engine_disappears_and_comes_back_restarted(server: MetricsServer) -> None:
    engine = VllmLike(start_time=1_000.0)
    server.routes["/metrics"] = Route(body=engine.text)
    scraper = EngineScraper(target(server), rate_window_s=100.0, retry_after_s=0.0)
    engine.child(engine.prompt).inc(1_000)
    assert scraper.scrape(now=0.0).error is None
    server.stop()
    down = scraper.scrape(now=5.0)
    assert down.error and down.error.startswith("unreachable: connection refused")
    assert down.values == {} and down.reading("requests_running").reason == down.error
    engine.restart(start_time=2_000.0)  # the engine comes back with counters at zero
    engine.child(engine.prompt).inc(100)
    server.start()  # same port
    back = scraper.scrape(now=10.0)
    assert back.error is None
    assert back.values["prompt_tokens_per_s"] == pytest.approx(100 / 10)  # never negative
    scraper.close()


def test_dead_endpoint_is_not_hammered(server: MetricsServer) -> None:
    scraper = EngineScraper(target(server), retry_after_s=60.0)
    server.stop()
    assert scraper.scrape(now=0.0).error
    requests_before = len(server.requests)
    assert scraper.scrape(now=1.0).error  # within retry_after_s: the last error, no request
    assert len(server.requests) == requests_before
    scraper.close()


def test_llamacpp_without_metrics_flag(server: MetricsServer) -> None:
    server.routes["/metrics"] = Route(
        status=501,
        body='{"error":{"code":501,"message":"This server does not support metrics endpoint."}}',
    )
    snapshot = EngineScraper(target(server, "llamacpp")).scrape()
    assert snapshot.error and "--metrics" in snapshot.error


def test_unparseable_answer_is_an_error_not_a_crash(server: MetricsServer) -> None:
    server.routes["/metrics"] = Route(body='vllm:num_requests_running{engine="0 1\n')
    snapshot = EngineScraper(target(server)).scrape()
    assert snapshot.error and "could not parse" in snapshot.error


def test_trtllm_falls_back_to_json_iteration_stats(server: MetricsServer, shared_dir: Path) -> None:
    iterations = json.loads(
        (shared_dir / "fixtures/metrics/trtllm_serve_iteration_stats.json").read_text()
    )
    queue = [iterations[:2], iterations[2:], []]
    server.routes["/metrics"] = Route(
        body=lambda: json.dumps(queue.pop(0)), content_type="application/json"
    )
    scraper = EngineScraper(target(server, "trtllm", "/prometheus/metrics"))
    first = scraper.scrape(now=0.0)
    assert scraper.mode == "json" and scraper.url == server.url + "/metrics"
    assert first.values["requests_running"] == 18
    scraper.scrape(now=1.0)
    idle = scraper.scrape(now=2.0)
    assert idle.values["requests_running"] == 0
    paths = [path for path, _ in server.requests]
    assert paths == ["/prometheus/metrics", "/metrics", "/metrics", "/metrics"]


def test_engine_without_metrics_is_not_scraped_but_said_unreachable(server: MetricsServer) -> None:
    """Its signals are "not reported"; whether it answers at all is still said (issue 56: one
    that refused connections had a green tick on the Monitor)."""
    snapshot = EngineScraper(ScrapeTarget("o", "ollama", None, base_url=server.url)).scrape()
    assert snapshot.error is None and snapshot.values == {}
    assert snapshot.reading("kv_cache_usage").reason == "not reported by Ollama"
    assert [request[0] for request in server.requests] == ["/health"]  # a 404 is an answer
    dead = EngineScraper(ScrapeTarget("o", "ollama", None, base_url="http://127.0.0.1:9"))
    snapshot = dead.scrape(now=100.0)
    assert snapshot.error and snapshot.error.startswith("unreachable: connection refused")
    assert dead.scrape(now=101.0).error == snapshot.error  # tried again only after retry_after_s


def test_hub_shares_fresh_snapshots_and_keeps_history(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = VllmLike()
    server.routes["/metrics"] = Route(body=engine.text)
    monkeypatch.setitem(sys.modules, "pynvml", make_fake_pynvml(gpus=[FakeGpu(), FakeGpu()]))
    hub = TelemetryHub(NvmlSampler())
    engines = [target(server), ScrapeTarget("e2", "vllm", server.url + "/metrics", base_url=server.url)]
    first = hub.sample(engines, gpus=[1], now=100.0)
    assert [s.source for s in first] == ["engine:e1", "engine:e2", "gpu:1"]
    requests = len(server.requests)
    again = hub.sample(engines[:1], gpus=False, max_age_s=0.5, now=100.2)
    assert again[0] is first[0] and len(server.requests) == requests  # shared, not read again
    hub.sample(engines[:1], gpus=False, max_age_s=0.5, now=101.0)
    assert len(server.requests) == requests + 1
    history = hub.history(["engine:e1", "gpu:1"], 60.0, now=101.0)
    assert [s.ts for s in history["engine:e1"]] == [100.0, 101.0]
    assert len(history["gpu:1"]) == 1
    hub.close()


def test_hub_without_gpu() -> None:
    hub = TelemetryHub(NullGpuSampler())
    assert not hub.gpu_state().available
    assert hub.sample([], gpus=True) == []
    hub.close()


def test_scraper_reads_histograms_about_once_a_second(server: MetricsServer) -> None:
    engine = VllmLike()
    server.routes["/metrics"] = Route(body=engine.text)
    scraper = EngineScraper(target(server), histogram_every_s=1.0)
    flags = []
    original = scraper.normaliser.update

    def spy(families, ts, marker=None, with_histograms=True):  # type: ignore[no-untyped-def]
        flags.append(with_histograms)
        return original(families, ts, marker, with_histograms)

    scraper.normaliser.update = spy  # type: ignore[method-assign]
    for tick in range(9):
        scraper.scrape(now=100.0 + tick * 0.25)
    assert flags == [True, False, False, False, True, False, False, False, True]
    scraper.close()


def test_slow_endpoints_are_read_in_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    import time as time_module

    engine = VllmLike()

    def slow() -> str:
        time_module.sleep(0.4)
        return engine.text()

    with MetricsServer() as a, MetricsServer() as b:
        a.routes["/metrics"] = Route(body=slow)
        b.routes["/metrics"] = Route(body=slow)
        hub = TelemetryHub(NullGpuSampler())
        targets = [
            ScrapeTarget("a", "vllm", a.url + "/metrics"),
            ScrapeTarget("b", "vllm", b.url + "/metrics"),
        ]
        for _ in range(2):
            started = time_module.perf_counter()
            snapshots = hub.sample(targets, gpus=False)
            assert time_module.perf_counter() - started < 0.75
            assert [s.error for s in snapshots] == [None, None]
        assert not any(hub.scraper(t).quick for t in targets)
        hub.close()
