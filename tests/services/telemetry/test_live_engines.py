"""Telemetry from the real local engines (llama.cpp with prompt cache, vLLM on CPU) while
they serve load: signals move, what an engine does not expose says so, a recording holds
rows, and `scrape` detects each engine from its base URL."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC

import httpx2
import pytest

import cli
from services.telemetry.gpu import NullGpuSampler
from services.telemetry.hub import TelemetryHub
from services.telemetry.query import load_window
from services.telemetry.recorder import start_recording
from services.telemetry.scraper import ScrapeTarget
from services.telemetry.snapshot import Snapshot

pytestmark = [pytest.mark.engines, pytest.mark.slow]

# Long enough to fill two of vLLM's 128-token prefix-cache blocks; repeated, so the second
# round of requests hits the cache on both engines.
PROMPT = " ".join(f"Fact {i}: the number {i} is followed by {i + 1}." for i in range(40)) + " Count on."


def load(records, rounds: int = 2, parallel: int = 3, max_tokens: int = 24) -> None:  # type: ignore[no-untyped-def]
    def one(record) -> None:  # type: ignore[no-untyped-def]
        body = {
            "model": record.model,
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        httpx2.post(record.base_url + "/v1/chat/completions", json=body, timeout=120).raise_for_status()

    for _ in range(rounds):
        threads = [threading.Thread(target=one, args=(r,)) for r in records for _ in range(parallel)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


@pytest.fixture
def two_engines(local_engines):  # type: ignore[no-untyped-def]
    by_name = {r.name: r for r in local_engines}
    return [by_name["llamacpp-4slot"], by_name["vllm-cpu"]]


@pytest.fixture
def hub() -> Iterator[TelemetryHub]:
    running = TelemetryHub(NullGpuSampler(), rate_window_s=5.0, latency_window_s=300.0)
    yield running
    running.close()


def test_signals_move_under_load_and_missing_ones_say_so(two_engines, hub: TelemetryHub) -> None:  # type: ignore[no-untyped-def]
    targets = [ScrapeTarget.from_record(r) for r in two_engines]
    seen: dict[str, list[Snapshot]] = {t.source: [] for t in targets}
    worker = threading.Thread(target=load, args=(two_engines,))
    worker.start()
    while worker.is_alive():
        for snapshot in hub.sample(targets, gpus=False):
            seen[snapshot.source].append(snapshot)
        time.sleep(0.25)
    worker.join()
    time.sleep(1.0)
    for snapshot in hub.sample(targets, gpus=False):
        seen[snapshot.source].append(snapshot)

    def values(source: str, signal: str) -> list[float]:
        return [v for s in seen[source] if (v := s.values.get(signal)) is not None]

    for source, samples in seen.items():
        assert all(s.error is None for s in samples), [s.error for s in samples]
        assert max(values(source, "requests_running")) >= 1, source
        assert max(values(source, "generation_tokens_per_s")) > 0, source
        assert max(values(source, "prompt_tokens_per_s")) > 0, source
        assert max(values(source, "prefix_cache_hit_rate")) > 0, source  # the second round hit the cache

    vllm, llama = seen["engine:vllm-cpu"][-1], seen["engine:llamacpp-4slot"][-1]
    assert vllm.values["kv_cache_usage"] is not None and 0 <= vllm.values["kv_cache_usage"] <= 1
    assert vllm.values["ttft_p50_s"] is not None and vllm.values["ttft_p50_s"] > 0
    assert vllm.values["e2e_p90_s"] is not None and vllm.values["e2e_p90_s"] >= vllm.values["ttft_p50_s"]
    assert vllm.reading("spec_decode_acceptance").reason == "not reported by vLLM"
    assert llama.reading("kv_cache_usage").reason == "not reported by llama.cpp"
    assert llama.reading("ttft_p50_s").reason == "not reported by llama.cpp"
    assert max(values("engine:llamacpp-4slot", "itl_mean_s")) > 0


def test_recording_during_load(two_engines, hub: TelemetryHub) -> None:  # type: ignore[no-untyped-def]
    from datetime import datetime

    from db.models import Run
    from db.session import session_scope

    with session_scope() as session:
        run = Run(kind="benchmark", name="live", status="running", started_at=datetime.now(UTC))
        session.add(run)
        session.flush()
        run_id = run.id
    recording = start_recording(
        run_id, [r.name for r in two_engines], gpus=True, interval_s=0.5, hub=hub
    )
    try:
        load(two_engines, rounds=1, parallel=2, max_tokens=16)
        time.sleep(1.0)
    finally:
        info = recording.stop()
    assert info.last_error is None and info.samples_written >= 4
    window = load_window(run_id=run_id)
    assert window.sources == ["engine:llamacpp-4slot", "engine:vllm-cpu"]
    frame = window.frame
    vllm = frame[frame["source"] == "engine:vllm-cpu"]
    # a counter-based rate cannot miss the load between two samples (a gauge can)
    assert vllm["generation_tokens_per_s"].max() > 0
    assert vllm["kv_cache_usage"].notna().all()
    assert window.not_reported["engine:llamacpp-4slot"]["kv_cache_usage"] == "not reported by llama.cpp"


@pytest.mark.parametrize(("name", "kind"), [("vllm-cpu", "vllm"), ("llamacpp-4slot", "llamacpp")])
def test_scrape_cli_detects_real_engines(
    local_engines, capsys: pytest.CaptureFixture[str], name: str, kind: str
) -> None:  # type: ignore[no-untyped-def]
    record = next(r for r in local_engines if r.name == name)
    assert cli.main(["scrape", record.base_url, "--json", "--interval", "0.5"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["kind"] == kind and payload["detected_by"] == "probe"
    signals = payload["sources"][0]["signals"]
    assert signals["requests_running"]["status"] == "ok"
