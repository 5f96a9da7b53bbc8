"""Property tests (hypothesis) of the streaming reader: whatever bytes an engine sends
back, the client returns a result with a known error class and never raises."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.client import ERROR_CLASSES, ChatRequest, make_http_client, run_blocking, stream_chat
from services.engines import SamplingParams


def _event(payload: object) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


chunk_json = st.fixed_dictionaries(
    {
        "choices": st.lists(
            st.fixed_dictionaries(
                {
                    "index": st.integers(0, 3),
                    "delta": st.one_of(
                        st.fixed_dictionaries({"content": st.text(max_size=20)}),
                        st.just({}),
                        st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
                    ),
                    "finish_reason": st.one_of(
                        st.none(), st.sampled_from(["stop", "length"]), st.integers()
                    ),
                }
            ),
            max_size=2,
        )
    },
    optional={
        "usage": st.one_of(
            st.none(),
            st.dictionaries(
                st.sampled_from(
                    ["prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"]
                ),
                st.one_of(st.integers(-5, 10**6), st.text(max_size=4), st.none()),
                max_size=4,
            ),
        ),
        "error": st.one_of(
            st.text(max_size=10), st.dictionaries(st.text(max_size=5), st.text(max_size=5))
        ),
    },
)
sse_piece = st.one_of(
    chunk_json.map(_event),
    st.just(b"data: [DONE]\n\n"),
    st.just(b": keep-alive\n\n"),
    st.binary(max_size=40),
    st.text(max_size=40).map(lambda t: b"data: " + t.encode() + b"\n\n"),
    st.just(b'data: {"choices": [{"delta": {"content": "\xff\xfe"}}]}\n\n'),
)
head = st.sampled_from(
    [
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n",
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n",
        b"HTTP/1.1 429 Too Many Requests\r\n",
        b"HTTP/1.1 302 Found\r\nlocation: /v1/chat/completions\r\n",
        b"HTTP/1.0 200 OK\r\n",
        b"garbage\r\n",
    ]
)


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
    request = ChatRequest(
        base_url=f"http://127.0.0.1:{port}",
        model="m",
        messages=[{"role": "user", "content": "x"}],
        params=SamplingParams(max_tokens=8),
        read_timeout_s=2,
        total_timeout_s=5,
    )
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
        # Some choice carried text (choice 0 may have none while choice 1 has some).
        assert any(result.texts)


@pytest.mark.parametrize(
    ("usage", "timings"),
    [
        ("lots", None),
        ([3], None),
        (7, None),
        ({"completion_tokens": 1}, "x"),
        ({"prompt_tokens": 2}, [1]),
    ],
)
def test_a_usage_or_timings_that_is_no_object_is_no_usage(usage: object, timings: object) -> None:
    """An engine that sends a string, a list or a number as its usage (or llama.cpp's
    timings) gets its answer measured from the stream, never a traceback reading it."""
    body = (
        _event({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]})
        + _event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "timings": timings})
        + _event({"choices": [], "usage": usage, "timings": timings})
        + b"data: [DONE]\n\n"
    )
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    result = run_blocking(_exchange(head + b"content-length: %d\r\n\r\n" % len(body) + body))
    assert result.ok and result.text == "hi", (result.error_class, result.error)
    assert result.usage is None or isinstance(result.usage, dict)
    assert result.timings is None
    summary = result.summary()
    assert summary["output_tokens"] == 1 and summary["cached_tokens"] is None


# -- the shape fast path reads exactly what the general path reads ---------------------

_BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
texts = st.text(
    alphabet=st.sampled_from(list('ab "\\\n\r\t/éü€😀<>{}[],:') + ["\u2028", "\x00"]), max_size=6
)


def _content_chunk(text: str, key: str = "content", **extra: object) -> dict:
    return {
        **_BASE,
        "choices": [{"index": 0, "delta": {key: text}, "logprobs": None, "finish_reason": None}],
        **extra,
    }


stream_item = st.one_of(
    texts.map(_content_chunk),  # the common shape, most of every stream
    texts.map(_content_chunk),
    texts.map(_content_chunk),
    texts.map(lambda t: _content_chunk(t, "reasoning_content")),
    texts.map(lambda t: _content_chunk(t, "reasoning_content")),
    texts.map(lambda t: _content_chunk(t, "reasoning")),
    texts.map(
        lambda t: _content_chunk(
            t, usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
        )
    ),
    texts.map(lambda t: _content_chunk(t, created=2)),
    texts.map(
        lambda t: {**_BASE, "choices": [{"index": 1, "delta": {"content": t}, "finish_reason": None}]}
    ),
    st.just(
        {
            **_BASE,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
            ],
        }
    ),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(stream_item, min_size=1, max_size=14),
    spaced=st.booleans(),
    framing=st.lists(st.integers(1, 3), min_size=1, max_size=20),
    split=st.integers(0, 40),
)
def test_the_shape_fast_path_reads_what_the_general_path_reads(
    items: list[dict], spaced: bool, framing: list[int], split: int
) -> None:
    """Content chunks of one shape are taken without a JSON parse (services/client/stream.py,
    _learn_shape); whatever the texts (quotes, escapes, line breaks, non-ASCII), shapes and
    framing, the answer must equal the general path's and a plain json.loads reading."""

    separators = (", ", ": ") if spaced else (",", ":")
    closing = [
        {**_BASE, "choices": [{"index": i, "delta": {}, "finish_reason": "stop"} for i in (0, 1)]},
        {
            **_BASE,
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 9, "total_tokens": 10},
        },
    ]
    events = [
        b"data: " + json.dumps(item, separators=separators, ensure_ascii=False).encode() + b"\n\n"
        for item in [*items, *closing]
    ] + [b"data: [DONE]\n\n"]
    # Chunk frames of 1 to 3 events, and now and then a frame cut in two.
    frames: list[bytes] = []
    position = 0
    for size in framing * (len(events) // len(framing) + 1):
        if position >= len(events):
            break
        frame = b"".join(events[position : position + size])
        position += size
        if split and len(frame) > split and len(frames) % 3 == 1:
            frames += [frame[:split], frame[split:]]
        else:
            frames.append(frame)
    response = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n%s\r\n" % (len(f), f) for f in frames)
        + b"0\r\n\r\n"
    )

    fast, general = _fast_and_general(lambda: _exchange(response))

    _assert_both_read_the_items(items, fast, general)


def test_chunks_of_the_learnt_shape_are_not_json_parsed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The point of the shape: after the first plain content chunk, chunks of the same shape
    are read without a JSON parse (the property test above only shows they read the same)."""
    import services.client.stream as stream_module

    parses = []
    real = stream_module._loads
    monkeypatch.setattr(stream_module, "_loads", lambda data: parses.append(data) or real(data))
    events = [_content_chunk(f"word{i} ") for i in range(40)]
    events.append({**_BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    frames = [b"data: " + json.dumps(e, separators=(",", ":")).encode() + b"\n\n" for e in events] + [
        b"data: [DONE]\n\n"
    ]
    response = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n%s\r\n" % (len(f), f) for f in frames)
        + b"0\r\n\r\n"
    )
    result = run_blocking(_exchange(response))
    assert result.ok and result.text == "".join(f"word{i} " for i in range(40))
    # The first content chunk, the shape's proof (the probe and the chunk again) and the finish
    # chunk are parsed; the 39 other content chunks are not.
    assert len(parses) == 4


def test_a_reasoning_model_has_its_thinking_and_its_answer_read_without_a_parse(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Thinking chunks (`reasoning_content`) and then answer chunks: the shape is learnt for
    each kind in turn, so neither phase parses JSON per token, and each chunk keeps its kind."""
    import services.client.stream as stream_module

    parses = []
    real = stream_module._loads
    monkeypatch.setattr(stream_module, "_loads", lambda data: parses.append(data) or real(data))
    events = [_content_chunk(f"think{i} ", "reasoning_content") for i in range(20)]
    events += [_content_chunk(f"word{i} ") for i in range(20)]
    events.append({**_BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    frames = [b"data: " + json.dumps(e, separators=(",", ":")).encode() + b"\n\n" for e in events] + [
        b"data: [DONE]\n\n"
    ]
    response = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n%s\r\n" % (len(f), f) for f in frames)
        + b"0\r\n\r\n"
    )
    result = run_blocking(_exchange(response))
    assert result.ok and result.text == "".join(f"word{i} " for i in range(20))
    assert result.reasoning_text == "".join(f"think{i} " for i in range(20))
    assert result.choices[0].reasoning == list(range(20))
    # Thinking: its first chunk, the second with the shape's proof; the answer: its first chunk
    # with the proof of its own shape; the finish chunk. The 36 other chunks are not parsed.
    assert len(parses) == 6


def test_a_delta_with_both_thinking_keys_counts_its_text_once() -> None:
    """vLLM renamed `reasoning_content` to `reasoning` and sent both, with the same text, for
    a while (vllm#27752 until #33402): one thinking chunk each, never two."""
    events = [
        {
            **_BASE,
            "choices": [
                {
                    "index": 0,
                    "delta": {"reasoning": f"t{i} ", "reasoning_content": f"t{i} "},
                    "finish_reason": None,
                }
            ],
        }
        for i in range(6)
    ]
    events += [_content_chunk(f"w{i} ") for i in range(3)]
    events.append({**_BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    frames = [b"data: " + json.dumps(e).encode() + b"\n\n" for e in events] + [b"data: [DONE]\n\n"]
    response = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n%s\r\n" % (len(f), f) for f in frames)
        + b"0\r\n\r\n"
    )
    fast, general = _fast_and_general(lambda: _exchange(response))
    for result in (fast, general):
        assert result.ok and result.text == "w0 w1 w2 "
        assert result.reasoning_text == "".join(f"t{i} " for i in range(6))
        assert result.choices[0].reasoning == list(range(6))


# -- the shape fast path, answers written in pieces: reads that end anywhere ------------------


async def _exchange_in_writes(writes: list[bytes]) -> object:
    """`_exchange`, but the answer goes out in separate writes, so that the client's reads
    start and end where these do (mostly: the kernel may still join two)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            for piece in writes:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0.001)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    request = ChatRequest(
        base_url=f"http://127.0.0.1:{port}",
        model="m",
        messages=[{"role": "user", "content": "x"}],
        read_timeout_s=2,
        total_timeout_s=5,
    )
    try:
        async with make_http_client(2, read_timeout_s=2) as client:
            return await stream_chat(client, request)
    finally:
        server.close()


def _size_line(length: int, style: str) -> bytes:
    """The size line of a chunk as servers may write it."""
    return {
        "plain": b"%x\r\n" % length,
        "upper": b"%X\r\n" % length,
        "zeros": b"00%x\r\n" % length,
        "extension": b"%x;name=value\r\n" % length,
    }[style]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(stream_item, min_size=1, max_size=16),
    styles=st.lists(
        st.sampled_from(["plain", "plain", "plain", "upper", "zeros", "extension"]), min_size=1
    ),
    cuts=st.lists(st.integers(0, 400), max_size=6),
    per_write=st.integers(1, 4),
)
def test_the_shape_fast_path_reads_what_the_general_path_reads_whatever_the_reads(
    items: list[dict], styles: list[str], cuts: list[int], per_write: int
) -> None:
    """The answer goes out in separate writes, cut anywhere (inside a size line, an event,
    a chunk's closing \\r\\n), with any size-line style: the reads the client sees then start
    and end anywhere, and the shape fast path (Exchange.on_body) must read what the general
    path reads (_SHAPE_TRIES = 0) and what a plain json reading gives."""

    events = [
        b"data: " + json.dumps(item, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"
        for item in [
            *items,
            {**_BASE, "choices": [{"index": i, "delta": {}, "finish_reason": "stop"} for i in (0, 1)]},
        ]
    ] + [b"data: [DONE]\n\n"]
    chunks = [
        _size_line(len(event), styles[i % len(styles)]) + event + b"\r\n"
        for i, event in enumerate(events)
    ]
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    writes = (
        [head]
        + [b"".join(chunks[i : i + per_write]) for i in range(0, len(chunks), per_write)]
        + [b"0\r\n\r\n"]
    )
    # Cut some writes inside a size line, an event or a chunk's closing \r\n.
    for cut in cuts:
        at = cut % len(writes)
        piece = writes[at]
        if len(piece) > 1:
            middle = 1 + cut % (len(piece) - 1)
            writes[at : at + 1] = [piece[:middle], piece[middle:]]

    fast, general = _fast_and_general(lambda: _exchange_in_writes(writes))

    _assert_both_read_the_items(items, fast, general)


def _fast_and_general(exchange: Callable[[], Coroutine[Any, Any, Any]]) -> tuple[Any, Any]:
    """The same answer read with the fast path allowed, then with it off (the general parse)."""
    import services.client.stream as stream_module

    fast = run_blocking(exchange())
    original = stream_module._SHAPE_TRIES
    stream_module._SHAPE_TRIES = 0
    try:
        general = run_blocking(exchange())
    finally:
        stream_module._SHAPE_TRIES = original
    return fast, general


def _assert_both_read_the_items(items: list[dict[str, Any]], fast: Any, general: Any) -> None:
    expected: dict[int, list[str]] = {}
    thinking: dict[int, list[int]] = {}
    for item in items:
        for entry in item["choices"]:
            delta = entry["delta"]
            text = delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning")
            if text:
                parts = expected.setdefault(entry["index"], [])
                if not delta.get("content"):
                    thinking.setdefault(entry["index"], []).append(len(parts))
                parts.append(text)
    for result in (fast, general):
        assert result.ok or result.error_class == "no_content", (result.error_class, result.error)
        assert {i: c.parts for i, c in result.choices.items() if c.parts} == expected
        # Thinking chunks are marked as such, whichever path read them.
        assert {i: c.reasoning for i, c in result.choices.items() if c.reasoning} == thinking
        assert all(
            c.chars == [len(p) for p in c.parts] and len(c.times) == len(c.parts)
            for c in result.choices.values()
        )
    assert fast.usage == general.usage and fast.finish_reason == general.finish_reason
