"""A benchmark's engine-metrics recorder takes its last sample the moment the run ends
(services/bench/recording.py), not a tick later. That is right only if each engine has
counted a request by the time its last chunk reaches the client: read here on each real
local engine, whose generated-token counter must have grown by the answer's tokens when it
is read straight after the stream ends, three answers in a row."""

from __future__ import annotations

import asyncio

import pytest

from services.bench import jobs
from services.bench.jobs.engine_metrics import default_metrics_url
from services.client import ChatRequest, run_chat
from services.engines.base import SamplingParams
from tests.services.bench.test_real_engines import counter

pytestmark = pytest.mark.engines

#: Each engine's own count of generated tokens (the counter its generation rate is read from).
COUNTERS = {
    "llamacpp-4slot": "llamacpp:tokens_predicted_total",
    "vllm-cpu": "vllm:generation_tokens_total",
    "sglang-cpu": "sglang:generation_tokens_total",
    "triton-python": "shootout_llm_generation_tokens_total",
}


@pytest.mark.parametrize("engine", sorted(COUNTERS))
def test_the_engine_has_counted_an_answer_when_its_stream_ends(local_engines: list, engine: str) -> None:
    target = jobs.engine_target(engine)
    metrics_url = default_metrics_url(target)
    assert metrics_url, engine
    before = counter(metrics_url, COUNTERS[engine])
    for tokens in (12, 20, 7):
        request = ChatRequest(
            base_url=target.base_url,
            model=target.model,
            messages=[{"role": "user", "content": "Count slowly from one to fifty."}],
            params=SamplingParams(max_tokens=tokens, temperature=0.0),
            kind=target.kind,
            total_timeout_s=60,
        )
        result = asyncio.run(run_chat(request))
        after = counter(metrics_url, COUNTERS[engine])
        assert result.ok, (engine, result.error)
        counted = result.metrics().output_tokens
        assert counted and after - before == counted, (engine, tokens, counted, after - before)
        before = after
