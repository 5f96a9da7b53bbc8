"""The Playground's panes: each engine's own prefill and decode beside the client's TTFT and
ITL, read from the scripted server in vLLM's and llama.cpp's shapes; "not reported by <engine>"
for an engine that times nothing."""

from __future__ import annotations

import pytest

from services import playground
from services.core.measure import EngineTimes
from services.engines import SamplingParams, endpoints
from services.playground import EngineChoice, SendRequest, view
from tests.support.scripted_server import ScriptedServer


def test_each_pane_says_where_its_engines_time_went(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    scenarios = {
        "vllm": ("vllm", {"report": "vllm", "etimes": "2:15:140"}),
        "llama": ("llamacpp", {"report": "llamacpp", "etimes": "0:12:130"}),
        "sglang": ("sglang", {}),
    }
    for name, (kind, scenario) in scenarios.items():
        endpoints.add_engine(
            name,
            scripted_server.base_url,
            kind=kind,
            model=scripted_server.model(ttft=20, itl=10, tokens=8, **scenario),
        )
    handle = playground.send(
        SendRequest(
            engines=tuple(EngineChoice(name) for name in scenarios),
            prompt="Hello",
            params=SamplingParams(max_tokens=16),
        )
    )
    assert playground.wait(handle.run_id, 30)
    columns = {c.engine: c for c in playground.get_exchange(handle.run_id).columns}
    assert columns["vllm"].engine_times == EngineTimes(
        queue_s=0.002,
        prefill_s=0.015,
        decode_s=0.14,
        prompt_tokens=columns["vllm"].prompt_tokens,
        cached_tokens=0,
        source="metrics",
    )
    split = columns["vllm"].time_split
    # The scripted times may add up to more than the client saw: the rest then reads 0, never below.
    left = columns["vllm"].e2e_s - (0.002 + (0.015 + 0.14))
    assert split is not None and split.e2e_rest_s == max(0.0, left)
    assert split.overcount_s == pytest.approx(max(0.0, -left))
    units = ("ms", "ms")
    line = view.engine_split(columns["vllm"], units)
    assert line is not None and line.startswith(
        "Engine's own: queue\u00a02.0\u00a0ms · prefill\u00a015.0\u00a0ms"
    )
    assert (
        "decode\u00a0140\u00a0ms\u00a0(20.0\u00a0ms/token)" in line and "rest\u00a0of\u00a0TTFT" in line
    )
    llama = view.engine_split(columns["llama"], units)
    assert llama is not None and "queue" not in llama and "prefill\u00a012.0\u00a0ms" in llama
    assert view.engine_split(columns["sglang"], units) == "Engine's own times: not reported by SGLang"
