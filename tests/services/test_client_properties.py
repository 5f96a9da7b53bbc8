"""Property tests (hypothesis) of the streaming reader: whatever bytes an engine sends
back, the client returns a result with a known error class and never raises."""

from __future__ import annotations

import asyncio
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.client import ERROR_CLASSES, ChatRequest, make_http_client, run_blocking, stream_chat
from services.engines import SamplingParams


def _event(payload: object) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


chunk_json = st.fixed_dictionaries(
    {"choices": st.lists(st.fixed_dictionaries({
        "index": st.integers(0, 3),
        "delta": st.one_of(st.fixed_dictionaries({"content": st.text(max_size=20)}), st.just({}),
                           st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)),
        "finish_reason": st.one_of(st.none(), st.sampled_from(["stop", "length"]), st.integers())}), max_size=2)},
    optional={"usage": st.one_of(st.none(), st.dictionaries(st.sampled_from(
        ["prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"]),
        st.one_of(st.integers(-5, 10**6), st.text(max_size=4), st.none()), max_size=4)),
        "error": st.one_of(st.text(max_size=10), st.dictionaries(st.text(max_size=5), st.text(max_size=5)))},
)
sse_piece = st.one_of(
    chunk_json.map(_event),
    st.just(b"data: [DONE]\n\n"),
    st.just(b": keep-alive\n\n"),
    st.binary(max_size=40),
    st.text(max_size=40).map(lambda t: b"data: " + t.encode() + b"\n\n"),
    st.just(b"data: {\"choices\": [{\"delta\": {\"content\": \"\xff\xfe\"}}]}\n\n"),
)
head = st.sampled_from([
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n",
    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n",
    b"HTTP/1.1 429 Too Many Requests\r\n",
    b"HTTP/1.1 302 Found\r\nlocation: /v1/chat/completions\r\n",
    b"HTTP/1.0 200 OK\r\n",
    b"garbage\r\n",
])


async def _exchange(response: bytes) -> object:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(response)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    request = ChatRequest(base_url=f"http://127.0.0.1:{port}", model="m", messages=[{"role": "user", "content": "x"}],
                          params=SamplingParams(max_tokens=8), read_timeout_s=2, total_timeout_s=5)
    try:
        async with make_http_client(2, read_timeout_s=2) as client:
            return await stream_chat(client, request)
    finally:
        server.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=head, pieces=st.lists(sse_piece, max_size=12), chunked=st.booleans())
def test_any_answer_gives_a_classified_result(head: bytes, pieces: list[bytes], chunked: bool) -> None:
    body = b"".join(pieces)
    if chunked:
        framed = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces if p) + b"0\r\n\r\n"
        response = head + b"transfer-encoding: chunked\r\n\r\n" + framed
    else:
        response = head + b"content-length: %d\r\n\r\n" % len(body) + body
    result = run_blocking(_exchange(response))
    assert result.ok or result.error_class in ERROR_CLASSES, (result.error_class, result.error)
    if not result.ok:
        assert result.error
    else:
        assert result.text
