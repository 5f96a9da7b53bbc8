"""One stream, one set of figures: the same recorded stream read through a Playground
exchange, a benchmark and a demo step gives identical TTFT, ITL list, TPOT, E2E and token
counts (issue 14: `cli.py ask` said ITL 10.00 ms where `cli.py bench` said 9.52 ms).

Each shape is streamed once from the scripted server by the real client; the three paths
then get that recording in place of a live stream (their `stream_chat` replays it), so
any difference left is a difference in how a path turns a stream into figures."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from sqlalchemy import select

from db.models import Exchange, RequestResult, Run
from db.session import session_scope
from services import playground
from services.bench.arrivals import LoadSpec
from services.bench.runner import execute_load
from services.bench.spec import EngineTarget
from services.bench.workloads import WorkloadSpec
from services.client import ChatRequest, StreamResult, run_blocking, run_chat
from services.demos.context import DemoContext
from services.engines import SamplingParams, endpoints
from services.playground import EngineChoice, SendRequest
from tests.support.scripted_server import ScriptedServer

#: (name, scripted scenario, tokens in each content chunk as the engine sent them)
SHAPES = [
    ("one token per chunk", {"ttft": 30, "itl": 4, "tokens": 12}, [1] * 12),
    ("four tokens per chunk", {"ttft": 30, "itl": 4, "tokens": 16, "tpc": 4}, [4] * 4),
    (
        "a first chunk of three tokens",
        {"ttft": 30, "itl": 4, "tokens": 9, "first": 3},
        [3, 1, 1, 1, 1, 1, 1],
    ),
    ("empty chunks between", {"ttft": 30, "itl": 4, "tokens": 10, "tpc": 2, "empty": 1}, [2] * 5),
]
FIGURES = ("ttft_s", "e2e_s", "tpot_s", "itl_s", "output_tokens", "prompt_tokens", "cached_tokens")


def record_stream(server: ScriptedServer, scenario: dict[str, Any]) -> StreamResult:
    """The shape streamed once for real; the usage arrives in a last chunk of its own."""
    request = ChatRequest(
        base_url=server.base_url,
        model=server.model(cached=5, prompt=20, **scenario),
        messages=[{"role": "user", "content": "hi"}],
    )
    result = run_blocking(run_chat(request))
    assert result.ok, result.error
    return result


def replaying(recorded: StreamResult) -> Any:
    """A stand-in for services.client.stream_chat that hands every caller the recording."""

    async def stream_chat(
        client: Any,
        request: ChatRequest,
        *,
        on_delta: Any = None,
        result: StreamResult | None = None,
        **_: Any,
    ) -> StreamResult:
        result = result if result is not None else StreamResult()
        for item in dataclasses.fields(StreamResult):
            setattr(result, item.name, copy.deepcopy(getattr(recorded, item.name)))
        if on_delta is not None:
            for index, choice in result.choices.items():
                for part in choice.parts:
                    on_delta(index, part, result)
        return result

    return stream_chat


def through_the_playground(server: ScriptedServer) -> dict[str, Any]:
    for name in ("left", "right"):
        if name not in {e.name for e in endpoints.list_engines()}:
            endpoints.add_engine(name, server.base_url, kind="vllm", model=server.model())
    handle = playground.send(
        SendRequest(
            engines=(EngineChoice("left"), EngineChoice("right")),
            prompt="hi",
            params=SamplingParams(max_tokens=64),
        )
    )
    assert playground.wait(handle.run_id, 30)
    view = playground.get_exchange(handle.run_id)
    column = next(c for c in view.columns if c.engine == "left")
    with session_scope() as session:
        row = session.scalars(
            select(Exchange).where(Exchange.run_id == handle.run_id, Exchange.engine_name == "left")
        ).one()
        metrics = dict(row.metrics or {})
    assert column.status == "finished", column.error
    return {
        **{key: metrics.get(key) for key in ("ttft_s", "e2e_s", "tpot_s", "itl_s", "output_tokens")},
        "prompt_tokens": column.prompt_tokens,
        "cached_tokens": column.cached_tokens,
    }


def through_a_benchmark(server: ScriptedServer) -> dict[str, Any]:
    outcome = execute_load(
        EngineTarget(name="bench", base_url=server.base_url, kind="vllm", model=server.model()),
        WorkloadSpec(input_len=8, output_len=64),
        LoadSpec(concurrency=1, requests=1),
        connect_ahead=False,
    )
    [record] = outcome.measured
    assert record.ok, record.error
    return {
        "ttft_s": record.ttft_s,
        "e2e_s": record.e2e_s,
        "tpot_s": record.tpot_s,
        "itl_s": record.itl_s,
        "output_tokens": record.output_tokens,
        "prompt_tokens": record.input_tokens,
        "cached_tokens": record.cached_tokens,
    }


def through_a_demo_step(server: ScriptedServer) -> dict[str, Any]:
    engine = endpoints.get_engine("left")
    with session_scope() as session:
        run = Run(kind="demo", name="same-figures", status="running", workload="demo:same-figures")
        session.add(run)
        session.flush()
        run_id = run.id
    context = DemoContext(run_id, [engine], {})
    request = ChatRequest(
        base_url=engine.base_url, model=engine.model or "", messages=[{"role": "user", "content": "hi"}]
    )
    [sent] = context.send(engine, [request], concurrency=1)
    assert sent.ok, sent.result.error
    with session_scope() as session:
        row = session.scalars(select(RequestResult).where(RequestResult.run_id == run_id)).one()
        return {
            key: getattr(row, key)
            for key in ("ttft_s", "e2e_s", "tpot_s", "itl_s", "output_tokens", "cached_tokens")
        } | {"prompt_tokens": row.input_tokens}


@pytest.mark.parametrize(("shape", "scenario", "chunk_tokens"), SHAPES, ids=[s[0] for s in SHAPES])
def test_playground_benchmark_and_demo_give_identical_figures_for_one_stream(
    db_url: str,
    scripted_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    shape: str,
    scenario: dict[str, Any],
    chunk_tokens: list[int],
) -> None:
    recorded = record_stream(scripted_server, scenario)
    expected = recorded.metrics()
    # The client saw exactly the content chunks the server wrote (empty ones carry no token).
    assert expected.chunk_tokens == chunk_tokens

    replay = replaying(recorded)
    for module in (
        "services.playground.worker",
        "services.bench.load.engine_load",
        "services.client.running",
    ):
        monkeypatch.setattr(f"{module}.stream_chat", replay)
    paths = {
        "playground": through_the_playground(scripted_server),
        "benchmark": through_a_benchmark(scripted_server),
        "demo": through_a_demo_step(scripted_server),
    }
    reference = {key: getattr(expected, key) for key in FIGURES}
    for name, figures in paths.items():
        assert figures == reference, f"{name} differs for {shape}"

    # The figures are the README's definitions, not just the same ones.
    tokens = scenario["tokens"]
    assert (
        reference["output_tokens"] == tokens
        and reference["cached_tokens"] == 5
        and reference["prompt_tokens"] == 20
    )
    assert len(reference["itl_s"]) == tokens - 1
    assert reference["itl_s"][: chunk_tokens[0] - 1] == [0.0] * (chunk_tokens[0] - 1)
    assert sum(reference["itl_s"]) == pytest.approx(reference["e2e_s"] - reference["ttft_s"], abs=1e-12)
    assert reference["tpot_s"] == pytest.approx(
        (reference["e2e_s"] - reference["ttft_s"]) / (tokens - 1), abs=1e-12
    )
    assert reference["ttft_s"] >= 0.030
