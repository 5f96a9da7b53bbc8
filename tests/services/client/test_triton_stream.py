"""Triton's generate_stream dialect: the request the client builds (path, body) and the reading
of Triton's SSE events (text deltas, token counts, finish, errors, a cut stream), against a
small server that answers with recorded-shape events as Triton 2.51 sends them."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator

import pytest

from services.client import ChatRequest, as_openai_python, build_body, request_url, run_chat
from services.engines import SamplingParams

MESSAGES = [{"role": "user", "content": "Name three colours."}]


def event(text: str, produced: int, reason: str = "") -> bytes:
    # As tritonserver 2.51 writes them (keys sorted, compact JSON), one per response.
    body = {
        "finish_reason": reason,
        "model_name": "smollm2",
        "model_version": "1",
        "output_tokens": produced,
        "prompt_tokens": 34,
        "text_output": text,
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


class CannedTriton:
    """Answers each POST with `pieces` as HTTP chunks of one event stream; `end` False drops
    the connection instead of ending the response."""

    def __init__(self, pieces: list[bytes], end: bool = True) -> None:
        self.pieces = pieces
        self.end = end
        self.requests: list[tuple[bytes, bytes]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        body = await reader.readexactly(length)
        self.requests.append((head.split(b"\r\n", 1)[0], body))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for piece in self.pieces:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            await asyncio.sleep(0.01)
        if self.end:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        writer.close()


@pytest.fixture
async def serve() -> AsyncIterator:
    servers: list[asyncio.Server] = []

    async def start(canned: CannedTriton) -> str:
        server = await asyncio.start_server(canned.handle, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    yield start
    for server in servers:
        server.close()


def triton_request(base_url: str, **params: object) -> ChatRequest:
    return ChatRequest(
        base_url=base_url,
        model="smollm2",
        kind="triton",
        messages=MESSAGES,
        params=SamplingParams(**params),  # type: ignore[arg-type]
        read_timeout_s=5,
    )


def test_the_request_goes_to_generate_stream_with_the_chat_as_json() -> None:
    request = triton_request("http://h:8085/v1", max_tokens=24, temperature=0.0, seed=3, ignore_eos=True)
    assert request_url(request) == "http://h:8085/v2/models/smollm2/generate_stream"
    body = build_body(request)
    assert json.loads(body.pop("messages")) == MESSAGES
    assert body == {"stream": True, "max_tokens": 24, "temperature": 0.0, "seed": 3, "ignore_eos": True}
    # OpenAI engines are unchanged.
    openai = ChatRequest(base_url="http://h:8081", model="m", messages=MESSAGES, kind="vllm")
    assert request_url(openai) == "http://h:8081/v1/chat/completions"
    assert build_body(openai)["messages"] == MESSAGES


async def test_deltas_counts_and_finish_from_triton_events(serve) -> None:
    # An event split across reads, one with escapes and non-ASCII text, and the final one.
    first, second = event("1. Red", 1), event(' "blue"\n', 2)
    canned = CannedTriton([first[:20], first[20:] + second, event(" grün", 3), event("", 3, "length")])
    base = await serve(canned)
    result = await run_chat(triton_request(base, max_tokens=3))
    assert result.ok, result.error
    choice = result.choice(0)
    assert choice is not None
    assert choice.text == '1. Red "blue"\n grün'
    assert choice.finish_reason == "length"
    assert len(choice.times) == 3  # the empty final event is no token
    assert result.usage == {"completion_tokens": 3, "prompt_tokens": 34, "total_tokens": 37}
    metrics = result.metrics()
    assert metrics.output_tokens == 3 and metrics.prompt_tokens == 34
    assert result.ttft_s is not None and 0 < result.ttft_s < metrics.e2e_s
    assert len(metrics.itl_s) == 2
    line, body = canned.requests[0]
    assert line == b"POST /v2/models/smollm2/generate_stream HTTP/1.1"
    assert json.loads(body)["max_tokens"] == 3


async def test_a_model_without_finish_reason_ends_with_the_response(serve) -> None:
    events = [b'data: {"model_name":"ensemble","text_output":"Hi"}\n\n']
    result = await run_chat(triton_request(await serve(CannedTriton(events))))
    assert result.ok, result.error
    assert result.choice(0).finish_reason == "stop"  # type: ignore[union-attr]


async def test_an_error_event_fails_the_request_in_plain_words(serve) -> None:
    events = [event("Hi", 1), b'data: {"error":"model smollm2 ran out of memory"}\n\n']
    result = await run_chat(triton_request(await serve(CannedTriton(events))))
    assert not result.ok and result.error_class == "stream_error"
    assert "ran out of memory" in (result.error or "")
    assert result.choice(0).text == "Hi"  # type: ignore[union-attr]


async def test_a_cut_stream_is_not_a_finished_answer(serve) -> None:
    result = await run_chat(triton_request(await serve(CannedTriton([event("Hi", 1)], end=False))))
    assert not result.ok and result.error_class == "stream_cut"
    assert result.choice(0).text == "Hi"  # type: ignore[union-attr]  # the partial answer is kept


async def test_the_copy_as_python_sample_streams_from_generate_stream(serve) -> None:
    """Issue 47: Triton's "copy as Python" called /v1/chat/completions (a 404 on Triton). The
    sample, run as it is pasted, now posts to generate_stream and prints the answer."""
    canned = CannedTriton([event("1. Red", 1), event(" blue", 2), event("", 2, "stop")])
    base = await serve(canned)
    code = as_openai_python(triton_request(base + "/v1", max_tokens=2))
    assert "chat/completions" not in code and "from openai" not in code
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()
    assert out.decode().strip() == "1. Red blue"
    [(line, body)] = canned.requests
    assert line.startswith(b"POST /v2/models/smollm2/generate_stream")
    assert json.loads(json.loads(body)["messages"]) == MESSAGES
