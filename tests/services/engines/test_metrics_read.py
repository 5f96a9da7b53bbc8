"""One bounded read of an engine's metrics page (issue 54): the settings read when a run starts
(services/engines/reported.py) and a step's edge counts (services/bench/window_counts.py) ask
for it alike and fail alike."""

from __future__ import annotations

from typing import Any

import pytest

from services.bench.spec import EngineTarget
from services.bench.window_counts import read_edge
from services.core import http
from services.engines import metrics_read
from services.engines.reported import reported_settings
from tests.support.hostile_server import HostileServer


def test_both_readers_send_the_same_headers_and_limit_and_say_the_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("METRICS_TEST_KEY", "secret")
    asked: list[dict[str, Any]] = []

    def unavailable(method: str, url: str, **options: Any) -> http.Reply:
        if url.endswith("/metrics"):
            asked.append(options)
        return http.Reply(status=503, url=url)

    monkeypatch.setattr(http, "fetch", unavailable)
    url = "http://127.0.0.1:9/metrics"
    target = EngineTarget(
        name="e",
        base_url="http://127.0.0.1:9/v1",
        kind="vllm",
        model="m",
        api_key_env="METRICS_TEST_KEY",
    )
    edge = read_edge(target, url)
    assert edge.error == "HTTP 503" and edge.counters == {}
    assert reported_settings("http://127.0.0.1:9", url, api_key_env="METRICS_TEST_KEY") == {}
    assert len(asked) == 2
    for options in asked:
        assert options["headers"] == {"Accept": "text/plain", "Authorization": "Bearer secret"}
        assert options["max_bytes"] == metrics_read.MAX_BYTES == 8 * 1024 * 1024
    with pytest.raises(metrics_read.MetricsReadError, match="^HTTP 503$"):
        metrics_read.read_metrics_text(url, None, deadline_s=1.0)


def test_a_page_over_the_limit_is_one_error_in_both() -> None:
    target = EngineTarget(name="e", base_url="http://127.0.0.1:9/v1", kind="vllm", model="m")
    with HostileServer("huge_declared") as server:
        url = server.url + "/metrics"
        with pytest.raises(metrics_read.MetricsReadError) as refused:
            metrics_read.read_metrics_text(url, None, deadline_s=3.0)
        edge = read_edge(target, url)
        settings = reported_settings(server.url, url, deadline_s=3.0)
    assert "the limit for this call is 8" in refused.value.reason
    assert edge.error == refused.value.reason
    assert "metrics_info" not in settings
