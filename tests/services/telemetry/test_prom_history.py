"""Engine and GPU history read through the product from the real test Prometheus
(scripts/prometheus.sh): the real local engines, a dcgm-exporter sample, an engine whose
counters reset; plus a Prometheus that is down, slow, or refuses too many points."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime

import numpy as np
import pytest

from services import local_engines as local_engines_service
from services.core import http
from services.core.errors import EngineError, NotFoundError, ValidationError
from services.engines import endpoints
from services.telemetry import prom_api, prom_history
from services.telemetry.prom_api import PromServer
from tests.services.telemetry.support import MetricsServer, Route
from tests.support.prometheus import SAMPLES_ORIGIN, TEST_SELECTOR, wait_for_scrapes


def server(url: str, selector: str = TEST_SELECTOR, **options: object) -> PromServer:
    return PromServer.from_input(url, selector, **options)  # type: ignore[arg-type]


def values(history: prom_history.PromHistory, source: str, signal: str) -> np.ndarray:
    item = next(s for s in history.series if s.source == source)
    array = item.signals[signal]
    return array[np.isfinite(array)]


def test_counter_resets_give_a_steady_rate_and_percentiles(db_url: str, prometheus: str) -> None:
    # The resetting engine falls back to zero every 20 s; 25 one-second scrapes hold a reset.
    endpoints.add_engine(
        "resetting", SAMPLES_ORIGIN, kind="vllm", metrics_url=SAMPLES_ORIGIN + "/resetting"
    )
    # Right after Prometheus starts, the first rate windows hold too few samples and read low:
    # the window read below must begin after a whole rate window of scrapes.
    wait_for_scrapes(prometheus, "resetting", at_least=25 + 5 + 2)
    end = time.time()
    result = prom_history.history(
        server(prometheus), end - 25, end, step_s=1, engine_names=["resetting"], rate_window_s=5
    )
    item = next(s for s in result.series if s.source == "engine:resetting")
    assert item.matched_by == "scrape target" and item.kind == "vllm"
    rate = values(result, "engine:resetting", "generation_tokens_per_s")
    assert len(rate) >= 15
    # 10 tokens/s, never a negative jump or a spike at a reset. One scrape that came late on a
    # busy machine reads up to a third low for one rate window (seen in a fresh-clone run: 6.45),
    # so the floor is loose while the median holds the rate.
    assert 9 <= float(np.median(rate)) <= 11, rate
    assert rate.min() > 5 and rate.max() < 13, rate
    assert set(values(result, "engine:resetting", "kv_cache_usage")) == {0.25}
    assert set(values(result, "engine:resetting", "requests_running")) == {3.0}
    p50 = values(result, "engine:resetting", "ttft_p50_s")
    assert len(p50) and ((p50 > 0.01) & (p50 <= 0.1)).all()  # every first token in the 10-100 ms bucket
    assert (
        item.not_reported["prefix_cache_hit_rate"] == "not reported by vLLM"
    )  # missing series: absent, not zero


def test_dcgm_gpus_come_back_with_the_live_source_names(prometheus: str) -> None:
    end = time.time()
    result = prom_history.history(server(prometheus), end - 20, end, step_s=2)
    sources = [s.source for s in result.series]
    assert sources == ["gpu:gpu-node-07/0", "gpu:gpu-node-07/1"]
    used = values(result, "gpu:gpu-node-07/0", "gpu_memory_used_bytes")
    assert len(used) >= 5 and used[0] > 70 * 2**30
    assert set(values(result, "gpu:gpu-node-07/0", "gpu_utilization_pct")) == {97.0}


def test_real_local_engines_by_scrape_target(local_engines: list, prometheus: str) -> None:
    for job in ("llamacpp", "vllm"):
        wait_for_scrapes(prometheus, job, at_least=10)
    # A real request, so the counters move while Prometheus watches.
    http.fetch(
        "POST",
        next(r.base_url for r in local_engines if r.name == "llamacpp-1slot") + "/v1/chat/completions",
        deadline_s=60,
        json={"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 8},
    )
    time.sleep(3)
    end = time.time()
    names = [record.name for record in local_engines]
    result = prom_history.history(
        server(prometheus), end - 60, end, step_s=1, engine_names=names, rate_window_s=5, gpus=False
    )
    by_source = {s.source: s for s in result.series}
    assert set(by_source) == {f"engine:{n}" for n in names}, result.messages
    assert {s.matched_by for s in by_source.values()} == {"scrape target"}
    vllm, one_slot = by_source["engine:vllm-cpu"], by_source["engine:llamacpp-1slot"]
    kv = values(result, "engine:vllm-cpu", "kv_cache_usage")
    assert len(kv) and ((kv >= 0) & (kv <= 1)).all()
    assert "ttft_p90_s" in vllm.signals and "ttft_p90_s" not in vllm.not_reported
    assert one_slot.not_reported["kv_cache_usage"] == "not reported by llama.cpp"
    assert one_slot.not_reported["ttft_p90_s"] == "not reported by llama.cpp"
    assert values(result, "engine:llamacpp-1slot", "generation_tokens_per_s").max() > 0


def test_a_job_label_finds_every_instance_and_its_kind(prometheus: str) -> None:
    wait_for_scrapes(prometheus, "llamacpp", at_least=5)
    end = time.time()
    result = prom_history.history(
        server(prometheus), end - 30, end, step_s=5, job="llamacpp", gpus=False
    )
    ports = {spec.id: spec.port for spec in local_engines_service.specs()}
    assert [s.source for s in result.series] == [
        f"engine:127.0.0.1:{ports['llamacpp-4slot']}",
        f"engine:127.0.0.1:{ports['llamacpp-1slot']}",
    ]
    assert {s.kind for s in result.series} == {"llamacpp"}
    with pytest.raises(NotFoundError, match="no series of job 'nope'"):
        prom_history.history(server(prometheus), end - 30, end, step_s=5, job="nope")


def test_a_manual_mapping_when_labels_differ(db_url: str, prometheus: str) -> None:
    # Registered under the address the team uses; Prometheus scrapes it by another name.
    endpoints.add_engine("behind-proxy", "http://vllm.internal:8000", kind="vllm")
    end = time.time()
    unmatched = prom_history.history(
        server(prometheus), end - 20, end, step_s=2, engine_names=["behind-proxy"], mapping={}
    )
    assert not [s for s in unmatched.series if s.kind != "gpu"]
    assert (
        "no series for behind-proxy" in unmatched.messages[0]
        and "SHOOTOUT_PROMETHEUS_ENGINES" in unmatched.messages[0]
    )
    mapping = prom_history.parse_engine_mapping('behind-proxy=job="resetting"')
    mapped = prom_history.history(
        server(prometheus), end - 20, end, step_s=2, engine_names=["behind-proxy"], mapping=mapping
    )
    item = next(s for s in mapped.series if s.source == "engine:behind-proxy")
    assert item.matched_by == "manual mapping" and len(
        values(mapped, "engine:behind-proxy", "kv_cache_usage")
    )


def test_the_selector_narrows_every_query(prometheus: str) -> None:
    end = time.time()
    result = prom_history.history(
        server(prometheus, 'namespace="someone-else"'), end - 20, end, step_s=2, job=None
    )
    assert result.series == []
    with pytest.raises(ValidationError, match="not a list of label matchers"):
        PromServer.from_input(prometheus, "up) or vector(1")


def test_a_run_window_from_its_stored_times(db_url: str, prometheus: str) -> None:
    from db.models import Run
    from db.session import session_scope

    endpoints.add_engine(
        "resetting", SAMPLES_ORIGIN, kind="vllm", metrics_url=SAMPLES_ORIGIN + "/resetting"
    )
    # Right after Prometheus starts, the first rate windows hold too few samples and read low:
    # the window read below must begin after a whole rate window of scrapes.
    wait_for_scrapes(prometheus, "resetting", at_least=25 + 5 + 2)
    end = time.time()
    with session_scope() as session:
        imported = Run(
            kind="import",
            name="elsewhere",
            status="done",
            engine_names="resetting,not-here",
            started_at=datetime.fromtimestamp(end - 20, UTC),
            finished_at=datetime.fromtimestamp(end, UTC),
        )
        undated = Run(kind="import", name="no times", status="done")
        session.add_all([imported, undated])
        session.flush()
        imported_id, undated_id = imported.id, undated.id
    window = prom_history.run_window(imported_id)
    assert (
        window.engine_names == ["resetting", "not-here"] and round(window.end_ts - window.start_ts) == 20
    )
    from services.telemetry import monitor

    view = monitor.run_history_view(server(prometheus), imported_id)
    assert any("not-here" in e for e in view.errors)
    assert any(c.has_data for c in view.charts if c.key.endswith("kv_cache"))
    # On the run's own clock, as the Runs page's telemetry replay (it mixed in wall-clock axes).
    assert {c.figure.layout.xaxis.title.text for c in view.charts} == {"seconds since the run started"}
    with pytest.raises(ValidationError, match="no start time"):
        prom_history.run_window(undated_id)


def test_too_many_points_is_refused_with_the_step_that_would_do(prometheus: str) -> None:
    end = time.time()
    with pytest.raises(
        ValidationError, match=r"172,801 points .* at most 11,000: use a step of at least 16 s"
    ):
        prom_history.history(server(prometheus), end - 2 * 86400, end, step_s=1, job="llamacpp")
    # Prometheus itself agrees: asked directly, it refuses the same query.
    answer = http.fetch(
        "GET",
        prometheus + "/api/v1/query_range",
        deadline_s=5,
        params={"query": "up", "start": end - 2 * 86400, "end": end, "step": 1},
    )
    assert answer.status == 400 and "11,000" in answer.text


def slow_answer() -> str:
    time.sleep(3)
    return '{"status":"success","data":[]}'


def test_a_prometheus_that_is_down_or_slow(db_url: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    end = time.time()
    with pytest.raises(
        EngineError, match=f"Prometheus at http://127.0.0.1:{closed_port}: connection refused"
    ):
        prom_history.history(server(f"127.0.0.1:{closed_port}"), end - 60, end, job="vllm")
    with MetricsServer() as slow:
        slow.routes["/api/v1/label/instance/values"] = Route(body=slow_answer)
        with pytest.raises(EngineError, match="did not answer within 0.5 s"):
            prom_history.history(server(slow.url, timeout_s=0.5), end - 60, end, job="vllm")


def test_a_bearer_token_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with MetricsServer() as stand_in:
        stand_in.routes["/api/v1/targets"] = Route(
            body='{"status":"success","data":{"activeTargets":[]}}', content_type="application/json"
        )
        with pytest.raises(ValidationError, match="SHOP_PROM_TOKEN is not set"):
            prom_api.scrape_targets(server(stand_in.url, token_env="SHOP_PROM_TOKEN"))
        monkeypatch.setenv("SHOP_PROM_TOKEN", "s3cret")
        prom_api.scrape_targets(server(stand_in.url, token_env="SHOP_PROM_TOKEN"))
        assert stand_in.requests[-1][1]["authorization"] == "Bearer s3cret"
        stand_in.routes["/api/v1/targets"] = Route(status=401, body="unauthorized")
        with pytest.raises(
            EngineError, match="refused the request \\(HTTP 401\\): check the token in SHOP_PROM_TOKEN"
        ):
            prom_api.scrape_targets(server(stand_in.url, token_env="SHOP_PROM_TOKEN"))


def test_the_operators_token_is_not_sent_to_another_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.telemetry import monitor

    monkeypatch.setenv("SHOOTOUT_PROMETHEUS_URL", "http://prom.team:9090")
    monkeypatch.setenv("SHOOTOUT_PROMETHEUS_TOKEN_ENV", "TEAM_TOKEN")
    monkeypatch.setenv("SHOOTOUT_PROMETHEUS_SELECTOR", 'namespace="prod"')
    assert monitor.history_server("").token_env == "TEAM_TOKEN"
    assert monitor.history_server("http://prom.team:9090/").selector == 'namespace="prod"'
    assert monitor.history_server("http://elsewhere:9090").token_env is None
