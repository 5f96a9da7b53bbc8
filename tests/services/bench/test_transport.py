"""The load generator's HTTP path against the shared client: same streams, same verdicts."""

from __future__ import annotations

import asyncio
import socket

import pytest
import uvloop

from services.bench.transport import FastChatClient
from services.client import ChatRequest, make_http_client, stream_chat
from services.engines import SamplingParams
from tests.support.scripted_server import ScriptedServer

SCENARIOS = [
    {"tokens": 8},
    {"tokens": 9, "tpc": 3},
    {"tokens": 8, "usage": 0},
    {"fault": "cut"},
    {"fault": "cut_before_done"},
    {"fault": "http", "status": 503},
    {"fault": "http", "status": 429, "body": "text"},
    {"fault": "error_in_stream"},
    {"fault": "invalid_json"},
    {"fault": "wrong_content_type"},
    {"fault": "usage_only"},
    {"fault": "redirect_loop"},
    {"replay": "vllm_chat_stream.txt"},
    {"replay": "llamacpp_chat_stream.txt"},
]


def request(server: ScriptedServer, **scenario) -> ChatRequest:
    return ChatRequest(base_url=server.base_url, model=server.model(ttft=2, itl=1, **scenario),
                       messages=[{"role": "user", "content": "hello there"}], params=SamplingParams(max_tokens=16),
                       read_timeout_s=5)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_same_verdict_as_the_shared_client(scripted_server: ScriptedServer, scenario: dict) -> None:
    chat = request(scripted_server, **scenario)

    async def both():
        async with FastChatClient() as fast:
            ours = await fast.stream_chat(chat)
        async with make_http_client(2) as http:
            theirs = await stream_chat(http, chat)
        return ours, theirs

    ours, theirs = uvloop.run(both())
    assert (ours.ok, ours.error_class) == (theirs.ok, theirs.error_class)
    assert ours.texts == theirs.texts
    assert ours.usage == theirs.usage
    assert ours.finish_reason == theirs.finish_reason
    assert len(ours.chunk_times_s) == len(theirs.chunk_times_s)
    assert (ours.ttft_s is None) == (theirs.ttft_s is None)
    if ours.ok:
        assert ours.e2e_s >= ours.ttft_s > 0
    if ours.error_class == "http_status":
        assert ours.error.startswith(f"HTTP {scenario['status']}")


def test_keep_alive_reuses_one_connection(scripted_server: ScriptedServer) -> None:
    chat = request(scripted_server, tokens=4)

    async def run():
        async with FastChatClient() as fast:
            results = [await fast.stream_chat(chat) for _ in range(5)]
            return results, fast.open_connections

    results, connections = uvloop.run(run())
    assert all(r.ok for r in results)
    assert connections == 1


def test_read_timeout_and_refused_connection(scripted_server: ScriptedServer) -> None:
    stalled = ChatRequest(base_url=scripted_server.base_url, model=scripted_server.model(fault="stall", delay=3000),
                          messages=[{"role": "user", "content": "x"}], read_timeout_s=0.5)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    refused = ChatRequest(base_url=f"http://127.0.0.1:{closed_port}/v1", model="m", messages=[{"role": "user", "content": "x"}])

    async def run():
        async with FastChatClient() as fast:
            return await fast.stream_chat(stalled), await fast.stream_chat(refused)

    timed_out, not_there = uvloop.run(run())
    assert timed_out.error_class == "read_timeout"
    assert timed_out.text  # what came before the silence is kept
    assert not_there.error_class == "connect_refused"


def test_cancelling_a_request_records_it(scripted_server: ScriptedServer) -> None:
    chat = ChatRequest(base_url=scripted_server.base_url, model=scripted_server.model(ttft=2, itl=10, tokens=500),
                       messages=[{"role": "user", "content": "x"}], params=SamplingParams(max_tokens=500))

    async def run():
        async with FastChatClient() as fast:
            from services.client import StreamResult

            result = StreamResult()
            task = asyncio.ensure_future(fast.stream_chat(chat, result=result))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return result

    result = uvloop.run(run())
    assert result.error_class == "cancelled" and not result.ok
    assert result.text


def test_holds_512_streams_at_once(scripted_server: ScriptedServer) -> None:
    chat = ChatRequest(base_url=scripted_server.base_url, model=scripted_server.model(ttft=20, itl=100, tokens=20),
                       messages=[{"role": "user", "content": "x"}], params=SamplingParams(max_tokens=20))
    peak = 0

    async def run():
        nonlocal peak
        async with FastChatClient() as fast:
            payload = fast.prepare(chat)
            tasks = [asyncio.ensure_future(fast.stream_chat(chat, payload=payload)) for _ in range(512)]
            while not all(t.done() for t in tasks):
                peak = max(peak, fast.streams_in_flight)
                await asyncio.sleep(0.05)
            return [t.result() for t in tasks]

    results = uvloop.run(run())
    assert peak == 512
    assert sum(r.ok for r in results) == 512
    assert {r.output_tokens for r in results} == {20}
