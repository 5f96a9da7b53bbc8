"""SGLang's router (smg) for real, in front of the local llama.cpp servers: it answers and
streams, its own metrics normalise after traffic, the probe names it from its answers, and a
small benchmark through it completes."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

import cli
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec
from services.bench.workloads import WorkloadSpec
from services.client import ChatRequest, run_chat
from services.engines import SamplingParams
from services.engines.endpoints import EngineRecord
from services.engines.probe import probe
from services.engines.router.local import worker_urls
from services.local_engines.catalog import local_port
from services.telemetry.scraper import EngineScraper, ScrapeTarget

pytestmark = pytest.mark.engines


@pytest.fixture
def router(local_engines: list) -> EngineRecord:
    return next(r for r in local_engines if r.kind == "router")


def chat(router: EngineRecord, text: str) -> ChatRequest:
    """A streamed chat request (the client always streams)."""
    return ChatRequest(
        base_url=router.base_url,
        model=router.model or "",
        kind=router.kind,
        messages=[{"role": "user", "content": text}],
        params=SamplingParams(temperature=0.0, max_tokens=12),
        read_timeout_s=120,
    )


async def test_chat_through_the_router_answers_and_streams(router: EngineRecord) -> None:
    streamed = await run_chat(chat(router, "Name two colours."))
    assert streamed.ok, streamed.error
    choice = streamed.choice(0)
    assert choice is not None and choice.text.strip()
    assert (
        streamed.ttft_s is not None and streamed.e2e_s is not None and streamed.e2e_s > streamed.ttft_s
    )
    assert streamed.usage and streamed.usage["completion_tokens"] > 0
    body = {
        "model": router.model,
        "messages": [{"role": "user", "content": "Name a fruit."}],
        "max_tokens": 8,
    }
    answer = httpx2.post(router.base_url + "/v1/chat/completions", json=body, timeout=120)
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"]
    # It says which of its workers answered: one of the chosen llama.cpp servers.
    assert answer.headers["x-smg-routed-worker-id"] in worker_urls()


async def test_its_own_metrics_normalise_after_traffic(router: EngineRecord) -> None:
    target = ScrapeTarget.from_record(router)
    assert target.metrics_url == router.metrics_url == f"http://127.0.0.1:{local_port(8088)}/metrics"
    scraper = EngineScraper(target, rate_window_s=600.0)
    before = scraper.scrape()
    assert before.error is None, before.error
    for number in range(3):
        result = await run_chat(chat(router, f"Count to {number + 3}."))
        assert result.ok, result.error
    await asyncio.sleep(0.5)
    after = scraper.scrape()
    assert after.error is None, after.error
    values = after.values
    assert values["requests_per_s"] is not None and values["requests_per_s"] > 0
    assert values["workers_healthy"] == values["workers_total"] == len(worker_urls())
    assert values["requests_running"] == 0
    assert values["router_request_mean_s"] is not None and values["router_request_mean_s"] > 0
    # Over HTTP workers the router never sees tokens: no TTFT (smg times it only in gRPC mode).
    assert after.reading("ttft_p50_s").reason == "not reported by SGLang router (smg)"


def test_the_probe_names_the_live_router(
    router: EngineRecord, capsys: pytest.CaptureFixture[str]
) -> None:
    result = probe(router.base_url)
    assert (result.state, result.kind, result.version) == ("ok", "router", "1.13.0")
    assert router.model in result.models
    # Its metrics port alone names it too.
    assert cli.main(["scrape", router.metrics_url or "", "--json", "--interval", "0.5"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (payload["kind"], payload["detected_by"]) == ("router", "metrics")
    assert payload["sources"][0]["signals"]["workers_healthy"]["status"] == "ok"


def test_a_short_benchmark_through_the_router(router: EngineRecord) -> None:
    spec = BenchSpec(
        engines=(jobs.engine_target(router.name),),
        workload=WorkloadSpec(input_len=32, output_len=8),
        load=LoadSpec(concurrency=2, requests=4, warmup_requests=1),
        timeout_s=120,
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    assert jobs.get_run(run_id).status == "finished"
    block = summary["engines"][router.name]
    assert (block["completed"], block["failed"], block["sent"]) == (4, 0, 4)
    assert block["ttft_s"]["p50"] > 0 and block["output_tokens"] > 0
