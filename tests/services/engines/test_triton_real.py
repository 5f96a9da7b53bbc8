"""The real Triton Inference Server (nvidia-pytriton's tritonserver 2.51) with the Python-backend
SmolLM2 model: it answers generate and streams generate_stream through our client, the probe
names it with its backend, its nv_inference_* metrics normalise after traffic, and a small
benchmark through services/bench completes."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec
from services.bench.workloads import WorkloadSpec
from services.client import ChatRequest, run_chat
from services.engines import SamplingParams
from services.engines.endpoints import EngineRecord
from services.engines.probe import probe
from services.local_engines.catalog import local_port
from services.parity.runner import send_one
from services.parity.tasks import task_set
from services.telemetry.scraper import EngineScraper, ScrapeTarget

pytestmark = pytest.mark.engines


@pytest.fixture
def triton(local_engines: list) -> EngineRecord:
    return next(r for r in local_engines if r.name == "triton-python")


def chat(engine: EngineRecord, text: str, max_tokens: int = 12) -> ChatRequest:
    return ChatRequest(
        base_url=engine.base_url,
        model=engine.model or "",
        kind=engine.kind,
        messages=[{"role": "user", "content": text}],
        params=SamplingParams(temperature=0.0, max_tokens=max_tokens),
        read_timeout_s=120,
    )


async def test_generate_answers_and_generate_stream_streams(triton: EngineRecord) -> None:
    answer = httpx2.post(
        f"{triton.base_url}/v2/models/smollm2/generate",
        json={"text_input": "The capital of France is", "max_tokens": 6, "temperature": 0},
        timeout=120,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["text_output"].strip() and body["output_tokens"] == 6 and body["prompt_tokens"] > 0
    streamed = await run_chat(chat(triton, "Name two colours."))
    assert streamed.ok, streamed.error
    choice = streamed.choice(0)
    assert choice is not None and choice.text.strip() and choice.finish_reason in ("stop", "length")
    # One event per token: TTFT before the end, gaps between tokens.
    assert len(choice.times) > 1
    assert streamed.ttft_s is not None and streamed.e2e_s is not None
    assert 0 < streamed.ttft_s < streamed.e2e_s
    assert streamed.usage and 0 < streamed.usage["completion_tokens"] <= 12
    assert streamed.usage["prompt_tokens"] > 5  # the chat template was applied


def test_the_probe_names_triton_and_its_python_backend(triton: EngineRecord) -> None:
    result = probe(triton.base_url)
    assert result.ok, result.message
    assert result.kind == "triton"
    assert result.kind_label == "Triton (Python backend)"
    assert result.version == "2.51.0" and result.models == ["smollm2"]
    assert result.healthy is True
    assert "TensorRT" not in result.message


async def test_its_metrics_normalise_with_requests_counted(triton: EngineRecord) -> None:
    target = ScrapeTarget.from_record(triton)
    assert target.metrics_url == f"http://127.0.0.1:{local_port(8086)}/metrics"
    scraper = EngineScraper(target, rate_window_s=600.0, latency_window_s=600.0)
    before = scraper.scrape()
    assert before.error is None, before.error
    for number in range(2):
        result = await run_chat(chat(triton, f"Count to {number + 3}.", max_tokens=8))
        assert result.ok, result.error
    await asyncio.sleep(0.5)
    after = scraper.scrape()
    assert after.error is None, after.error
    values = after.values
    assert values["generation_tokens_per_s"] is not None and values["generation_tokens_per_s"] > 0
    assert values["prompt_tokens_per_s"] is not None and values["prompt_tokens_per_s"] > 0
    assert values["e2e_mean_s"] is not None and values["e2e_mean_s"] > 0
    assert values["requests_waiting"] == 0 and values["requests_running"] == 0
    text = httpx2.get(target.metrics_url or "", timeout=10).text
    success = [
        line
        for line in text.splitlines()
        if line.startswith('nv_inference_request_success{model="smollm2"')
    ]
    assert success and float(success[0].split()[-1]) >= 2


def test_a_short_benchmark_completes(triton: EngineRecord) -> None:
    spec = BenchSpec(
        engines=(jobs.engine_target("triton-python"),),
        workload=WorkloadSpec(input_len=16, output_len=6),
        load=LoadSpec(concurrency=2, requests=3, warmup_requests=1),
        timeout_s=120,
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    assert jobs.get_run(run_id).status == "finished"
    block = summary["engines"]["triton-python"]
    assert (block["completed"], block["failed"]) == (3, 0)
    assert block["output_tokens"] > 0
    assert block["ttft_s"]["p50"] > 0


def test_parity_compares_tritons_answers(triton: EngineRecord) -> None:
    """Parity asks Triton through generate_stream (its chat completion URL was a 404): the
    answer's text is scored, and Triton reports no log-probabilities."""
    row = send_one(triton, task_set(1)[0], max_tokens=12, seed=0, top_logprobs=5)
    assert row["ok"], row["error"]
    assert row["extra"]["text"].strip() and row["extra"]["tokens"] is None
    assert 0 < row["output_tokens"] <= 12 and row["e2e_s"] > 0
    assert (row["extra"]["score"] is None) == (task_set(1)[0].expected is None)
