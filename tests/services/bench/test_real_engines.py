"""Small benchmarks against the real local engines (llama.cpp and vLLM on CPU): exact prompt
lengths from their tokenizers, fixed output lengths honoured, usage-based token counts that
match the engines' own counters, engine metrics recorded with the run, prefix caching seen."""

from __future__ import annotations

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec
from services.bench.workloads import WorkloadSpec

pytestmark = pytest.mark.engines


def counter(metrics_url: str, name: str) -> float:
    text = httpx2.get(metrics_url, headers={"Accept": "text/plain"}, timeout=10).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                total += sample.value
    return total


def test_llamacpp_and_vllm_side_by_side(local_engines: list) -> None:
    llama = jobs.engine_target("llamacpp-4slot")
    vllm = jobs.engine_target("vllm-cpu")
    before = counter(vllm.metrics_url, "vllm:generation_tokens_total")
    spec = BenchSpec(
        engines=(llama, vllm),
        workload=WorkloadSpec(input_len=32, output_len=12),
        load=LoadSpec(concurrency=2, requests=4, warmup_requests=1),
        timeout_s=120,
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    after = counter(vllm.metrics_url, "vllm:generation_tokens_total")
    assert jobs.get_run(run_id).status == "finished"
    assert summary["prompt_calibration"]["method"] == "tokenize"
    for name in ("llamacpp-4slot", "vllm-cpu"):
        block = summary["engines"][name]
        assert (block["completed"], block["failed"], block["sent"]) == (4, 0, 4)
        assert block["output_tokens"] == 4 * 12
        assert block["honoured_output_len"] is True
        assert block["ttft_s"]["p50"] > 0 and block["itl_s"]["p50"] > 0
        records = [r for r in jobs.load_records(run_id) if r.engine == name and not r.warmup]
        # Exact prompt lengths: every prompt is the same number of tokens for the engine.
        assert len({r.input_tokens for r in records}) == 1
        assert records[0].input_tokens >= 32
    assert summary["engines"]["llamacpp-4slot"]["unsupported_options"] == ["min_tokens"]
    # The engine's own counter moved by at least our (usage-reported) tokens, warm-up included.
    assert after - before >= 5 * 12
    assert summary["engines"]["vllm-cpu"]["engine_metrics"]["kv_cache_usage_max"] is not None


def test_shared_prefix_hits_the_llamacpp_prompt_cache(local_engines: list) -> None:
    llama = jobs.engine_target("llamacpp-4slot")
    spec = BenchSpec(
        engines=(llama,),
        workload=WorkloadSpec(
            kind="shared_prefix", prefix_groups=1, prefix_len=200, input_len=8, output_len=4
        ),
        load=LoadSpec(concurrency=1, requests=4),
        timeout_s=120,
    )
    summary = jobs.execute_run(jobs.create_run(spec))
    block = summary["engines"]["llamacpp-4slot"]
    assert block["completed"] == 4
    # The 200-token system prompt is reused from the second request on.
    assert block["cached_tokens"] >= 3 * 200
