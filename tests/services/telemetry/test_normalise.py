"""Engine metrics -> normalised signals, for every engine fixture, with windows, counter
resets, missing signals and the engines whose reads consume data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from services.engines import get_adapter
from services.engines.base import JsonMetricsState
from services.engines.normalise import EngineNormaliser, metric_prefixes
from services.engines.signals import ENGINE_SIGNAL_NAMES
from services.telemetry.scraper import kind_from_metrics
from tests.services.telemetry.support import VllmLike
from tests.support.metrics_text import parse_text

LATENCY = [f"{b}_{s}" for b in ("ttft", "itl", "e2e") for s in ("p50_s", "p90_s", "p99_s", "mean_s")]


def normaliser(kind: str, **windows: float) -> EngineNormaliser:
    adapter = get_adapter(kind)
    return EngineNormaliser(adapter.telemetry_signals, adapter.label, **windows)


def families(kind: str, text: str):  # type: ignore[no-untyped-def]
    return parse_text(text, metric_prefixes(get_adapter(kind).telemetry_signals))


# Per fixture: detected kind, instant gauges expected, signals an engine does not expose.
FIXTURE_EXPECTATIONS = {
    "vllm.txt": ("vllm", {"requests_running": 23, "requests_waiting": 4}, set()),
    "vllm_cpu_0.32_real.txt": (
        "vllm",
        {"requests_running": 0, "requests_waiting": 0, "kv_cache_usage": 0.0},
        {"spec_decode_acceptance"},
    ),
    "sglang.txt": (
        "sglang",
        {"requests_running": 41, "requests_waiting": 6, "kv_cache_usage": 0.57},
        set(),
    ),
    "llamacpp.txt": (
        "llamacpp",
        {"requests_running": 0, "requests_waiting": 0},
        {"kv_cache_usage", "preemptions_per_s", *[s for s in LATENCY if s != "itl_mean_s"]},
    ),
    "trtllm_serve_prometheus.txt": (
        "trtllm",
        {"requests_running": 17, "requests_waiting": 2, "kv_cache_usage": 0.4412},
        {"preemptions_per_s", "spec_decode_acceptance"},
    ),
    "trtllm_serve_prometheus_legacy.txt": (
        "trtllm",
        {},
        {
            "kv_cache_usage",
            "prefix_cache_hit_rate",
            "requests_running",
            "requests_waiting",
            "prompt_tokens_per_s",
            "generation_tokens_per_s",
            "preemptions_per_s",
            "spec_decode_acceptance",
        },
    ),
    "trtllm_triton.txt": (
        "triton",
        {"requests_running": 14, "requests_waiting": 3, "kv_cache_usage": 0.4591049382716049},
        {
            "prefix_cache_hit_rate",
            "preemptions_per_s",
            "spec_decode_acceptance",
            *[s for s in LATENCY if s.startswith("itl")],
            "e2e_p50_s",
            "e2e_p90_s",
            "e2e_p99_s",
        },
    ),
    "tgi.txt": (
        "tgi",
        {"requests_running": 19, "requests_waiting": 2, "kv_cache_usage": 14238 / 322864},
        {
            "prefix_cache_hit_rate",
            "preemptions_per_s",
            "spec_decode_acceptance",
            *[s for s in LATENCY if s.startswith("ttft")],
        },
    ),
}


def test_every_engine_fixture_is_covered(shared_dir: Path) -> None:
    engine_files = {p.name for p in (shared_dir / "fixtures/metrics").glob("*.txt")} - {
        "dcgm_exporter.txt"
    }
    assert engine_files == set(FIXTURE_EXPECTATIONS)


@pytest.mark.parametrize("name", sorted(FIXTURE_EXPECTATIONS))
def test_fixture_normalises(shared_dir: Path, name: str) -> None:
    kind, gauges, not_exposed = FIXTURE_EXPECTATIONS[name]
    text = (shared_dir / "fixtures/metrics" / name).read_text()
    assert kind_from_metrics(text) == kind
    state = normaliser(kind)
    first = state.update(families(kind, text), 0.0)
    second = state.update(families(kind, text), 1.0)
    label = get_adapter(kind).label
    for result in (first, second):
        # every signal answered exactly once: value/None, or missing with the one wording
        assert set(result.values) | set(result.missing) == set(ENGINE_SIGNAL_NAMES)
        assert not set(result.values) & set(result.missing)
        assert set(result.missing) == not_exposed
        assert all(reason == f"not reported by {label}" for reason in result.missing.values())
        for signal, value in gauges.items():
            assert result.values[signal] == pytest.approx(value)
    # rates need two readings; identical readings mean nothing happened (0, not None)
    for signal in ("prompt_tokens_per_s", "generation_tokens_per_s"):
        if signal not in not_exposed:
            assert first.values[signal] is None
            assert second.values[signal] == 0.0
    # nothing finished between the two readings: percentiles have no data (None, not 0)
    for signal in LATENCY:
        if signal not in not_exposed and signal in second.values and "mean" not in signal:
            assert second.values[signal] is None


def bump(text: str, metric: str, new_value: float) -> str:
    """Set the (single) sample of `metric` in real exposition text to new_value."""
    pattern = re.compile(rf"^({re.escape(metric)}(?:{{[^}}]*}})?) \S+$", re.MULTILINE)
    assert pattern.search(text), metric
    return pattern.sub(lambda m: f"{m.group(1)} {new_value}", text)


def test_real_vllm_capture_rates_and_hit_rate(shared_dir: Path) -> None:
    text = (shared_dir / "fixtures/metrics/vllm_cpu_0.32_real.txt").read_text()
    later = bump(text, "vllm:prompt_tokens_total", 82 + 300)
    later = bump(later, "vllm:generation_tokens_total", 115 + 40)
    later = bump(later, "vllm:prefix_cache_queries_total", 82 + 300)
    later = bump(later, "vllm:prefix_cache_hits_total", 0 + 256)
    state = normaliser("vllm")
    state.update(families("vllm", text), 100.0)
    result = state.update(families("vllm", later), 102.0)
    assert result.values["prompt_tokens_per_s"] == pytest.approx(150.0)
    assert result.values["generation_tokens_per_s"] == pytest.approx(20.0)
    assert result.values["prefix_cache_hit_rate"] == pytest.approx(256 / 300)
    assert result.notes["prompt_tokens_per_s"] == "includes cached tokens"


def test_real_llamacpp_capture_uses_counters_not_reset_on_read_gauges(shared_dir: Path) -> None:
    text = (shared_dir / "fixtures/metrics/llamacpp.txt").read_text()
    later = bump(text, "llamacpp:prompt_tokens_total", 43 + 10)
    later = bump(later, "llamacpp:prompt_tokens_cached_total", 80 + 30)
    later = bump(later, "llamacpp:tokens_predicted_total", 194 + 50)
    later = bump(later, "llamacpp:tokens_predicted_seconds_total", 15.276 + 2.5)
    # the *_tokens_seconds gauges reset whenever anyone reads /metrics: never used
    later = bump(later, "llamacpp:predicted_tokens_seconds", 99999)
    state = normaliser("llamacpp")
    state.update(families("llamacpp", text), 0.0)
    result = state.update(families("llamacpp", later), 5.0)
    assert result.values["prefix_cache_hit_rate"] == pytest.approx(30 / 40)
    assert result.values["prompt_tokens_per_s"] == pytest.approx(40 / 5)
    assert result.values["generation_tokens_per_s"] == pytest.approx(50 / 5)
    assert result.values["itl_mean_s"] == pytest.approx(2.5 / 50)
    assert result.values["spec_decode_acceptance"] is None  # counters exist, no draft in the window
    assert result.missing["kv_cache_usage"] == "not reported by llama.cpp"


def test_windowed_percentiles_only_count_observations_in_the_window() -> None:
    engine = VllmLike()
    ttft = engine.child(engine.ttft)
    for _ in range(100):
        ttft.observe(4.0)  # old, slow requests: outside the window
    state = normaliser("vllm", latency_window_s=10.0)
    state.update(families("vllm", engine.text()), 0.0)
    state.update(families("vllm", engine.text()), 20.0)
    for _ in range(10):
        ttft.observe(0.03)
    result = state.update(families("vllm", engine.text()), 30.0)
    assert result.values["ttft_p50_s"] == pytest.approx(0.03, abs=0.02)
    assert result.values["ttft_p99_s"] <= 0.05
    assert result.values["ttft_mean_s"] == pytest.approx(0.03)


def test_rates_use_the_newest_reading_at_least_one_window_old() -> None:
    engine = VllmLike()
    gen = engine.child(engine.generation)
    state = normaliser("vllm", rate_window_s=10.0)
    for second in range(31):
        gen.inc(100 if second <= 20 else 10)  # 100 tok/s, then 10 tok/s
        result = state.update(families("vllm", engine.text()), float(second))
    assert result.values["generation_tokens_per_s"] == pytest.approx(10.0)


def test_counter_reset_counts_the_new_value_as_the_increase() -> None:
    engine = VllmLike(start_time=1_000.0)
    state = normaliser("vllm", rate_window_s=100.0)
    engine.child(engine.prompt).inc(1000)
    state.update(families("vllm", engine.text()), 0.0)
    engine.child(engine.prompt).inc(500)
    state.update(families("vllm", engine.text()), 10.0)
    engine.restart()  # same start time, counters back at zero: detected by the drop
    engine.child(engine.prompt).inc(200)
    result = state.update(families("vllm", engine.text()), 20.0)
    assert result.values["prompt_tokens_per_s"] == pytest.approx((500 + 200) / 20)


def test_restart_seen_by_process_start_time_even_when_counters_grew_past() -> None:
    engine = VllmLike(start_time=1_000.0)
    state = normaliser("vllm", rate_window_s=100.0)
    engine.child(engine.prompt).inc(100)
    state.update(families("vllm", engine.text()), 0.0)
    engine.restart(start_time=2_000.0)
    engine.child(engine.prompt).inc(400)  # above the old 100: only the start time tells
    result = state.update(families("vllm", engine.text()), 10.0)
    assert result.values["prompt_tokens_per_s"] == pytest.approx(40.0)


def test_histogram_reset_keeps_percentiles_sane() -> None:
    engine = VllmLike()
    state = normaliser("vllm", latency_window_s=100.0)
    for _ in range(50):
        engine.child(engine.e2e).observe(2.0)
    state.update(families("vllm", engine.text()), 0.0)
    engine.restart()
    for _ in range(5):
        engine.child(engine.e2e).observe(0.2)
    result = state.update(families("vllm", engine.text()), 10.0)
    assert result.values["e2e_mean_s"] == pytest.approx(0.2)
    assert 0.1 <= result.values["e2e_p50_s"] <= 0.25


def test_trtllm_json_iteration_stats_are_drained_per_read(shared_dir: Path) -> None:
    adapter = get_adapter("trtllm")
    iterations = json.loads(
        (shared_dir / "fixtures/metrics/trtllm_serve_iteration_stats.json").read_text()
    )
    state = normaliser("trtllm", rate_window_s=100.0)
    json_state = JsonMetricsState()
    first = state.update(adapter.telemetry_from_json(iterations[:1], json_state), 0.0)
    assert first.values["requests_running"] == 17 and first.values["requests_waiting"] == 2
    kv = iterations[0]["kvCacheStats"]
    assert first.values["kv_cache_usage"] == pytest.approx(kv["usedNumBlocks"] / kv["maxNumBlocks"])
    second = state.update(adapter.telemetry_from_json(iterations[1:], json_state), 2.0)
    newest = iterations[-1]["kvCacheStats"]
    reused = newest["reusedBlocks"] - kv["reusedBlocks"]
    missed = newest["missedBlocks"] - kv["missedBlocks"]
    assert second.values["prefix_cache_hit_rate"] == pytest.approx(reused / (reused + missed))
    tokens = sum(i["inflightBatchingStats"]["numCtxTokens"] for i in iterations[1:])
    assert second.values["prompt_tokens_per_s"] == pytest.approx(tokens / 2)
    # A read with nothing new (each read consumes): idle, not "not reported"
    idle = state.update(adapter.telemetry_from_json([], json_state), 3.0)
    assert idle.values["requests_running"] == 0 and idle.values["requests_waiting"] == 0
    assert idle.values["kv_cache_usage"] == pytest.approx(
        newest["usedNumBlocks"] / newest["maxNumBlocks"]
    )
    assert "ttft_p50_s" in idle.missing


def test_adapters_without_metrics_report_nothing_as_not_reported() -> None:
    for kind, label in (("ollama", "Ollama"), ("openai", "OpenAI-compatible")):
        result = normaliser(kind).update(parse_text(""), 0.0)
        assert result.values == {}
        assert set(result.missing.values()) == {f"not reported by {label}"}


def test_latency_histograms_can_be_refreshed_less_often() -> None:
    engine = VllmLike()
    state = normaliser("vllm", latency_window_s=60.0)
    without = metric_prefixes(get_adapter("vllm").telemetry_signals, histograms=False)
    assert "vllm:time_to_first_token_seconds" not in without and "vllm:prompt_tokens" in without
    engine.child(engine.ttft).observe(0.03)
    state.update(families("vllm", engine.text()), 0.0)
    engine.child(engine.ttft).observe(0.03)
    full = state.update(families("vllm", engine.text()), 1.0)
    assert full.values["ttft_mean_s"] == pytest.approx(0.03)
    engine.child(engine.ttft).observe(4.0)
    engine.child(engine.generation).inc(10)
    light = state.update(parse_text(engine.text(), without), 1.25, with_histograms=False)
    assert light.values["ttft_mean_s"] == pytest.approx(0.03)  # repeated until the next full read
    assert light.values["generation_tokens_per_s"] == pytest.approx(10 / 1.25)  # the rest is fresh
    assert set(light.values) | set(light.missing) == set(ENGINE_SIGNAL_NAMES)
    again = state.update(families("vllm", engine.text()), 2.0)
    assert again.values["ttft_mean_s"] == pytest.approx(
        (0.03 + 4.0) / 2
    )  # window from the last full read
