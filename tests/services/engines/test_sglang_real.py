"""The real SGLang 0.5.23 local engine (sglang-cpu): it answers and streams, RadixAttention
reports cached tokens on a repeated prompt, its /metrics normalise with counters that moved,
detection and /server_info name it, and the sgl_kernel stand-in was never called."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import httpx2
import pytest

from services import local_engines
from services.engines.probe import probe
from services.engines.sglang.local import SGLANG_VERSION, STANDIN_MARK
from services.telemetry.gpu import NullGpuSampler
from services.telemetry.hub import TelemetryHub
from services.telemetry.scraper import ScrapeTarget
from tests.support.metrics_text import parse_text

pytestmark = [pytest.mark.engines, pytest.mark.slow]

ENGINE_ID = "sglang-cpu"


@pytest.fixture
def sglang(local_engines):  # type: ignore[no-untyped-def]
    found = [r for r in local_engines if r.name == ENGINE_ID]
    if not found:
        pytest.fail(f"{ENGINE_ID} is not among the chosen local engines (SHOOTOUT_LOCAL_ENGINES)")
    return found[0]


def chat(record, content: str, max_tokens: int = 8, **extra) -> dict:  # type: ignore[no-untyped-def]
    body = {
        "model": record.model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0,
        **extra,
    }
    reply = httpx2.post(record.base_url + "/v1/chat/completions", json=body, timeout=180)
    reply.raise_for_status()
    return dict(reply.json())


def stream(record, content: str, max_tokens: int = 8) -> tuple[float, str, dict]:  # type: ignore[no-untyped-def]
    """(seconds to the first content, the text, the final usage) of a streamed chat."""
    body = {
        "model": record.model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    started, first, text, usage = time.perf_counter(), None, "", {}
    with httpx2.stream(
        "POST", record.base_url + "/v1/chat/completions", json=body, timeout=180
    ) as reply:
        reply.raise_for_status()
        for line in reply.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: ") :])
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece and first is None:
                    first = time.perf_counter() - started
                text += piece
            usage = chunk.get("usage") or usage
    assert first is not None, "no content streamed"
    return first, text, usage


def test_answers_and_streams(sglang) -> None:  # type: ignore[no-untyped-def]
    answer = chat(sglang, "What is the capital of France? Answer in one word.")
    assert answer["model"] == "smollm2"
    assert "paris" in answer["choices"][0]["message"]["content"].lower()
    assert answer["usage"]["completion_tokens"] >= 1
    _, text, usage = stream(sglang, "Count from one to five.", max_tokens=16)
    assert text.strip()
    assert usage["completion_tokens"] >= 2 and usage["prompt_tokens"] > 5


def test_radix_cache_reports_cached_tokens_and_cuts_ttft(sglang) -> None:  # type: ignore[no-untyped-def]
    # New to this server (the uuid first): nothing of it can be cached before the first request.
    prompt = f"Note {uuid.uuid4().hex}. " + " ".join(
        f"Fact {i}: the number {i} is followed by {i + 1}." for i in range(60)
    )
    cold_ttft, _, cold = stream(sglang, prompt, max_tokens=4)
    warm_ttft, _, warm = stream(sglang, prompt, max_tokens=4)
    assert 900 <= cold["prompt_tokens"] <= 1300
    assert cold["prompt_tokens_details"]["cached_tokens"] < 50  # the chat template's head at most
    assert warm["prompt_tokens_details"]["cached_tokens"] >= cold["prompt_tokens"] - 2
    assert warm_ttft < cold_ttft, (cold_ttft, warm_ttft)


def test_metrics_normalise_with_counters_that_moved(sglang) -> None:  # type: ignore[no-untyped-def]
    hub = TelemetryHub(NullGpuSampler(), rate_window_s=30.0, latency_window_s=300.0)
    try:
        target = ScrapeTarget.from_record(sglang)
        before = hub.sample([target], gpus=False)[0]
        prompt = "Repeat after me: " + " ".join(f"word{i}" for i in range(150))
        for _ in range(2):
            chat(sglang, prompt, max_tokens=16)
        time.sleep(1.0)
        after = hub.sample([target], gpus=False)[0]
    finally:
        hub.close()
    assert before.error is None and after.error is None, (before.error, after.error)
    assert after.kind == "sglang"
    assert after.values["generation_tokens_per_s"] and after.values["generation_tokens_per_s"] > 0
    assert after.values["prompt_tokens_per_s"] and after.values["prompt_tokens_per_s"] > 0
    assert after.values["prefix_cache_hit_rate"] and after.values["prefix_cache_hit_rate"] > 0
    assert after.values["kv_cache_usage"] is not None and 0 <= after.values["kv_cache_usage"] <= 1
    assert after.values["requests_running"] is not None
    assert after.values["ttft_p50_s"] and after.values["ttft_p50_s"] > 0
    assert after.values["e2e_p90_s"] and after.values["e2e_p90_s"] >= after.values["ttft_p50_s"]
    families = parse_text(httpx2.get(sglang.base_url + "/metrics", timeout=10).text)
    for counter in (
        "sglang:prompt_tokens_total",
        "sglang:generation_tokens_total",
        "sglang:cached_tokens_total",
    ):
        assert sum(value for _, value in families.select(counter)) > 0, counter


def test_detected_as_sglang_with_its_version(sglang) -> None:  # type: ignore[no-untyped-def]
    result = probe(sglang.base_url)
    assert (result.state, result.kind, result.models) == ("ok", "sglang", ["smollm2"])
    assert result.version == SGLANG_VERSION
    assert result.context_length == 2048
    info = httpx2.get(sglang.base_url + "/server_info", timeout=10).json()
    assert info["version"] == SGLANG_VERSION


def test_the_logs_hold_no_standin_call(sglang) -> None:  # type: ignore[no-untyped-def]
    """Last in the file: after every request above, the server's log of this start never
    holds the stand-in's error (SGLang never reached an sgl_kernel op)."""
    status = local_engines.status(ENGINE_ID)[0]
    assert status.log_file
    text = Path(status.log_file).read_text(errors="replace")
    this_start = text.rsplit("\n=== ", 1)[-1]
    assert "sglang.launch_server" in this_start.splitlines()[0]
    assert "POST /v1/chat/completions" in this_start  # the traffic above reached this log
    assert STANDIN_MARK not in this_start
