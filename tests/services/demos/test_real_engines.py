"""One scenario end to end on the real local engines: prefix caching, kept short.

vLLM (automatic prefix caching, 128-token blocks), SGLang (RadixAttention) and llama.cpp with
its prompt cache must serve the repeated prompt from their caches and say so in their usage;
llama.cpp started
with --no-cache-prompt must report none. The TTFT figures are printed for the record (they
depend on what else the machine is doing; the verdicts do not)."""

from __future__ import annotations

import pytest

from services.demos import runner

pytestmark = [pytest.mark.engines, pytest.mark.slow]


def test_prefix_caching_on_the_local_engines(local_engines) -> None:  # type: ignore[no-untyped-def]
    names = ["vllm-cpu", "sglang-cpu", "llamacpp-4slot", "llamacpp-1slot"]
    run_id = runner.start_demo(
        "prefix-cache",
        names,
        options={"prompt_tokens": 400, "turns": 2, "max_tokens": 4},
        background=False,
    )
    result = runner.demo_result(run_id)
    print(result["conclusion"])
    assert result["status"] == "finished", (result["error"], [s["errors"] for s in result["steps"]])
    verdicts = result["verdicts"]
    assert verdicts["vllm-cpu"]["verdict"] == "cache"
    assert verdicts["vllm-cpu"]["cached_tokens"] >= 256  # whole 128-token blocks of a ~400-token prompt
    assert verdicts["vllm-cpu"]["hit_rate"] > 0.25
    # RadixAttention reuses every token but the last of the repeated prompt.
    assert verdicts["sglang-cpu"]["verdict"] == "cache"
    assert verdicts["sglang-cpu"]["cached_tokens"] >= 0.9 * verdicts["sglang-cpu"]["prompt_tokens"]
    assert verdicts["sglang-cpu"]["hit_rate"] > 0.25
    assert verdicts["llamacpp-4slot"]["verdict"] == "cache"
    assert (
        verdicts["llamacpp-4slot"]["cached_tokens"] >= 0.9 * verdicts["llamacpp-4slot"]["prompt_tokens"]
    )
    assert verdicts["llamacpp-1slot"]["verdict"] == "none"
    assert verdicts["llamacpp-1slot"]["cached_tokens"] == 0
    assert "llamacpp-1slot (no cache)" in result["conclusion"]
