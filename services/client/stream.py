"""Reading one HTTP response as it arrives: the httptools callbacks, the SSE splitting and
the per-chunk hot path (`Exchange`), which fills a `StreamResult` inside the protocol's
data_received callback. Timing is one `time.perf_counter` per read, stored per content chunk."""

from __future__ import annotations

import asyncio
import json
from time import perf_counter
from typing import Protocol, cast

import httptools
import orjson

from services.client.records import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ChoiceStream,
    DeltaCallback,
    StreamResult,
    Timings,
    Usage,
    fail_result,
    merge_choice_usage,
    usage_reports,
)
from services.core.json_types import ForeignJson


class Link(Protocol):
    """What an exchange asks of the socket it reads (services.client.transport.Connection,
    which is built on this module)."""

    def close(self) -> None: ...

    def release(self) -> None: ...


_MAX_EVENT_BYTES = 16 * 1024 * 1024
#: The JSON parser of the hot path: orjson parses a typical 250-byte chunk in 0.47 µs
#: against 2.2 µs for json.loads (benchmarks/client_cpu_per_token.py --json).
_loads = orjson.loads
#: Content chunks tried for a reusable shape before a stream is read the general way throughout.
_SHAPE_TRIES = 4
_ERROR_BODY_BYTES = 64 * 1024


class Exchange:
    """One request and its response on one connection: the httptools callbacks and the SSE
    hot path. Fills `result`; `finished` resolves when the caller may judge it."""

    __slots__ = (
        "body",
        "buffer",
        "bytes_left",
        "choices",
        "complete",
        "connection",
        "deadline",
        "deadline_at",
        "error_class",
        "event_head",
        "event_tail",
        "finished",
        "head_size",
        "headers",
        "location",
        "loop",
        "mode",
        "now",
        "on_delta",
        "parser",
        "read_timeout_s",
        "received_any",
        "result",
        "shape_choice",
        "shape_head",
        "shape_key",
        "shape_marks",
        "shape_tail",
        "shape_tries",
        "status",
        "tail_size",
        "timer",
    )

    def __init__(
        self,
        connection: Link,
        result: StreamResult,
        on_delta: DeltaCallback | None,
        deadline: float | None,
        read_timeout_s: float,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.connection = connection
        self.bytes_left = max_bytes
        self.parser = httptools.HttpResponseParser(self)
        self.result = result
        self.choices = result.choices
        self.on_delta = on_delta
        self.deadline = deadline
        # The deadline as one float for the per-chunk test (no deadline: never).
        self.deadline_at = deadline if deadline is not None else float("inf")
        self.read_timeout_s = read_timeout_s
        self.loop = asyncio.get_running_loop()
        self.finished: asyncio.Future[None] = self.loop.create_future()
        self.now = result.start
        self.received_any = False
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.mode = ""
        self.buffer = b""
        self.body = bytearray()
        self.complete = False
        self.error_class: str | None = None
        self.location: str | None = None
        # The chunk shape (see _learn_shape): the bytes around a plain content chunk's text.
        self.shape_head = self.shape_tail = self.event_head = self.event_tail = b""
        self.head_size = self.tail_size = 0
        self.shape_choice: ChoiceStream | None = None
        # The delta key of the learnt text, and the choice's thinking marks when it is thinking.
        self.shape_key = ""
        self.shape_marks: list[int] | None = None
        self.shape_tries = _SHAPE_TRIES
        self.timer: asyncio.TimerHandle | None = self.loop.call_later(self._next_check(), self._watchdog)

    # -- timers ----------------------------------------------------------------------
    def _next_check(self) -> float:
        wait = self.read_timeout_s
        if self.deadline is not None:
            wait = min(wait, self.deadline - perf_counter())
        return max(wait, 0.001)

    def _watchdog(self) -> None:
        self.timer = None
        if self.finished.done():
            return
        now = perf_counter()
        if self.deadline is not None and now >= self.deadline:
            self.fault("total_timeout", "The answer took longer than the request's total time limit.")
            return
        if now - self.now >= self.read_timeout_s:
            self.fault(
                "read_timeout",
                f"The engine went silent for more than {self.read_timeout_s:g} s (read timeout).",
            )
            return
        wait = self.read_timeout_s - (now - self.now)
        if self.deadline is not None:
            wait = min(wait, self.deadline - now)
        self.timer = self.loop.call_later(max(wait, 0.001), self._watchdog)

    # -- ending ----------------------------------------------------------------------
    def settle(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if not self.finished.done():
            self.finished.set_result(None)

    def fault(self, error_class: str, message: str) -> None:
        """Stop this exchange with an error; the connection cannot be reused."""
        if self.error_class is None and not self.finished.done():
            self.error_class = error_class
            fail_result(self.result, error_class, message)
        self.mode = "ignore"
        self.connection.close()
        self.settle()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.finished.done():
            return
        if not self.status:
            self.fault(
                "protocol_error" if self.received_any else "closed_early",
                "The engine closed the connection before answering.",
            )
        elif self.mode == "sse":
            self.fault("stream_cut", "The connection closed before the answer was complete.")
        else:
            self.complete = True
            self.settle()

    # -- httptools callbacks ---------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_headers_complete(self) -> None:
        self.status = status = self.parser.get_status_code()
        self.result.http_status = status
        if status >= 300:
            self.mode = "body"
            location = self.headers.get(b"location")
            if 300 <= status < 400 and location:
                self.location = location.decode("latin-1")
        elif self.headers.get(b"content-type", b"").lower().startswith(b"text/event-stream"):
            self.mode = "sse"
        else:
            self.mode = "body"

    def on_message_complete(self) -> None:
        self.complete = True
        connection = self.connection
        if self.parser.should_keep_alive() and self.error_class is None:
            connection.release()
        else:
            connection.close()
        self.settle()

    def on_body(self, data: bytes) -> None:
        mode = self.mode
        if mode == "sse":
            # Fast path: one whole event shaped like the learnt content chunk (most of a stream);
            # _text_between written out here, since a call costs about a tenth of a token's CPU.
            choice = self.shape_choice
            if (
                choice is not None
                and not self.buffer
                and data.startswith(self.event_head)
                and data.endswith(self.event_tail)
            ):
                text = data[self.head_size : len(data) - self.tail_size]
                if (
                    text
                    and b'"' not in text
                    and b"\\" not in text
                    and b"\n" not in text
                    and b"\r" not in text
                ):
                    try:
                        content = text.decode()
                    except UnicodeDecodeError:
                        pass  # not UTF-8: the general path says so
                    else:
                        now = self.now
                        choice.parts.append(content)
                        choice.times.append(now)
                        marks = self.shape_marks
                        if marks is not None:
                            marks.append(len(choice.parts) - 1)
                        if self.on_delta is not None:
                            self.on_delta(choice.index, content, self.result)
                        if now > self.deadline_at:
                            self.fault(
                                "total_timeout",
                                "The answer took longer than the request's total time limit.",
                            )
                        return
            try:
                self._sse(data)
            except Exception as error:  # noqa: BLE001 - a callback bug must not kill the parser
                self.fault("error", f"{type(error).__name__}: {error}")
        elif mode == "body":
            self.body += data
            if len(self.body) > _ERROR_BODY_BYTES:
                self.complete = True
                self.mode = "ignore"
                self.connection.close()
                self.settle()

    # -- the hot path ----------------------------------------------------------------
    def _learn_shape(
        self, payload: bytes, chunk: ForeignJson, content: str, choice: ChoiceStream, key: str
    ) -> None:
        """Remember the bytes before and after this plain content chunk's text.

        Engines send nearly every token as the same JSON with only the text changed. A later
        payload that is exactly `head + text + tail`, with no quote, backslash or line break in
        `text`, parses to this same chunk with that text (the string cannot end early, nothing
        else differs), so it is taken without a JSON parse: a third of the client's CPU per token.
        Anything else (escapes, usage, finish, several choices) goes the general way.
        `chunk` is `payload` parsed. Learnt from a choice's second content chunk, so that an
        answer of one chunk (a 1-token request) never pays for it.
        """
        self.shape_tries -= 1
        encoded = orjson.dumps(content)
        for pattern in (b'"%s":%s' % (key.encode(), encoded), b'"%s": %s' % (key.encode(), encoded)):
            at = payload.find(pattern)
            if at >= 0 and payload.find(pattern, at + 1) < 0:
                opening = at + len(pattern) - len(encoded)
                head, tail = payload[: opening + 1], payload[opening + len(encoded) - 1 :]
                # Proof by example: another text in that place must give the same chunk otherwise.
                probe = _loads(head + b"probe" + tail)
                try:
                    probe["choices"][0]["delta"][key] = content
                except (KeyError, IndexError, TypeError):
                    return
                if probe != chunk:
                    return
                self.shape_head, self.shape_tail = head, tail
                self.event_head = b"data: " + self.shape_head
                self.event_tail = self.shape_tail + b"\n\n"
                self.head_size, self.tail_size = len(self.event_head), len(self.event_tail)
                self.shape_choice = choice
                self.shape_key = key
                self.shape_marks = choice.reasoning if key != "content" else None
                return

    def _events(self, data: bytes) -> list[bytes] | None:
        """The complete SSE events in what has arrived (the unfinished rest kept for the next
        read); None after an event grew past the limit without ending (the stream is faulted).
        One method per read, not per token: both dialects split events the same way."""
        buffer = self.buffer + data if self.buffer else data
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        events = buffer.split(b"\n\n")
        rest = events.pop()
        if rest and len(rest) > _MAX_EVENT_BYTES:
            self.fault("invalid_json", "A stream event exceeded 16 MB without ending.")
            return None
        self.buffer = rest
        return events

    def _sse(self, data: bytes) -> None:
        events = self._events(data)
        if events is None:
            return
        now = self.now
        result = self.result
        choices = self.choices
        on_delta = self.on_delta
        shape = self.shape_choice
        payload: bytes | None
        for event in events:
            if event[:6] == b"data: " and b"\n" not in event:
                payload = event[6:]
            else:
                payload = _event_data(event)
                if payload is None:
                    continue
            if shape is not None:
                content = _text_between(payload, self.shape_head, self.shape_tail)
                if content is not None:
                    shape.parts.append(content)
                    shape.times.append(now)
                    if self.shape_marks is not None:
                        self.shape_marks.append(len(shape.parts) - 1)
                    if on_delta is not None:
                        on_delta(shape.index, content, result)
                    continue
            if payload == b"[DONE]":
                result.done = True
                result.end = now
                if self.timer is not None:
                    self.timer.cancel()
                    self.timer = None
                if not self.finished.done():
                    self.finished.set_result(None)
                self.mode = "drain"
                return
            try:
                chunk = _loads(payload)
            except ValueError:
                self.fault(
                    "invalid_json",
                    f"A stream chunk was not valid JSON: {payload[:120].decode('utf-8', 'replace')!r}",
                )
                return
            if chunk.__class__ is not dict:
                self.fault("invalid_json", "A stream chunk was JSON but not an object.")
                return
            listed = chunk.get("choices")
            if listed:
                for entry in listed:
                    delta = entry.get("delta")
                    if delta:
                        content = delta.get("content")
                        key = "content"
                        if not content:
                            content, key = _thinking(delta)
                        if content:
                            index = entry.get("index") or 0
                            choice = choices.get(index)
                            if choice is None:
                                choice = choices[index] = ChoiceStream(index)
                            choice.parts.append(content)
                            choice.times.append(now)
                            if key != "content":
                                choice.reasoning.append(len(choice.parts) - 1)
                            if shape is not None and key != self.shape_key:
                                # The answer began after the thinking (or the other way round):
                                # learn this kind's shape, from the tries left.
                                shape = self.shape_choice = None
                            if result.ttft_s is None:
                                result.ttft_s = now - result.start
                            if on_delta is not None:
                                on_delta(index, content, result)
                            if (
                                shape is None
                                and self.shape_tries
                                and len(choice.parts) > 1
                                and len(listed) == 1
                                and not entry.get("finish_reason")
                                and not chunk.get("usage")
                                and not chunk.get("error")
                            ):
                                self._learn_shape(payload, chunk, content, choice, key)
                                shape = self.shape_choice
                    reason = entry.get("finish_reason")
                    if reason:
                        index = entry.get("index") or 0
                        choice = choices.get(index)
                        if choice is None:
                            choice = choices[index] = ChoiceStream(index)
                        choice.finish_reason = reason
                        result.timings = _timings(chunk.get("timings")) or result.timings
                        keep_engine_fields(result, chunk)
            usage = _usage(chunk.get("usage"))
            if usage:
                # llama.cpp sends one usage trailer per choice when n > 1; vLLM one for all
                # (and, with continuous_usage_stats, a running total on every chunk).
                previous = result.usage
                if previous is not None and len(choices) > 1 and usage_reports(previous) < len(choices):
                    result.usage = merge_choice_usage(previous, usage)
                else:
                    result.usage = usage
                result.timings = _timings(chunk.get("timings")) or result.timings
                result.response_id = chunk.get("id")
                keep_engine_fields(result, chunk)
            elif chunk.get("error"):
                message = error_message(json.dumps(chunk).encode())
                self.fault("stream_error", f"The engine reported an error mid-stream: {message}")
                return
        if self.deadline is not None and now > self.deadline:
            self.fault("total_timeout", "The answer took longer than the request's total time limit.")


class TritonExchange(Exchange):
    """An exchange with Triton's generate extension (`generate_stream`): one SSE event per
    response of a decoupled model, `{"text_output": <new text>, "output_tokens": <so far>,
    "prompt_tokens": n, "finish_reason": "" | "stop" | "length", "model_name": ...}` and
    `{"error": ...}` on failure. No [DONE]: the response's end is the stream's end. One JSON
    parse per event (orjson), as the OpenAI path's general case; its learnt-shape shortcut does
    not apply, since every event carries a new token count."""

    __slots__ = ()

    def _sse(self, data: bytes) -> None:
        events = self._events(data)
        if events is None:
            return
        now = self.now
        result = self.result
        for event in events:
            payload = event[6:] if event[:6] == b"data: " and b"\n" not in event else _event_data(event)
            if payload is None:
                continue
            try:
                chunk = _loads(payload)
            except ValueError:
                self.fault(
                    "invalid_json",
                    f"A stream event was not valid JSON: {payload[:120].decode('utf-8', 'replace')!r}",
                )
                return
            if chunk.__class__ is not dict:
                self.fault("invalid_json", "A stream event was JSON but not an object.")
                return
            if chunk.get("error"):
                self.fault("stream_error", f"The engine reported an error mid-stream: {chunk['error']}")
                return
            choice = self.choices.get(0)
            if choice is None:
                choice = self.choices[0] = ChoiceStream(0)
            text = chunk.get("text_output")
            if text and text.__class__ is str:
                choice.parts.append(text)
                choice.times.append(now)
                if result.ttft_s is None:
                    result.ttft_s = now - result.start
                if self.on_delta is not None:
                    self.on_delta(0, text, result)
            produced = chunk.get("output_tokens")
            if produced is not None:
                prompt = chunk.get("prompt_tokens")
                usage: Usage = {"completion_tokens": produced}
                if prompt is not None:
                    usage["prompt_tokens"] = prompt
                    if isinstance(prompt, int) and isinstance(produced, int):
                        usage["total_tokens"] = prompt + produced
                result.usage = usage
            reason = chunk.get("finish_reason")
            if reason:
                choice.finish_reason = str(reason)
        if self.deadline is not None and now > self.deadline:
            self.fault("total_timeout", "The answer took longer than the request's total time limit.")

    def on_message_complete(self) -> None:
        # The end of Triton's response is the end of the stream (it sends the model's final
        # response last); a model that names no finish reason has finished all the same.
        if self.mode == "sse" and self.error_class is None:
            self.result.done = True
            self.result.end = self.now
            for choice in self.choices.values():
                if choice.finish_reason is None:
                    choice.finish_reason = "stop"
        super().on_message_complete()


#: The top-level keys of an OpenAI chat chunk; anything else an engine adds is its own report.
_OPENAI_CHUNK_KEYS = frozenset(
    ("id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier")
)


def keep_engine_fields(result: StreamResult, chunk: ForeignJson) -> None:
    """Keep the engine's own top-level fields of a closing chunk (one with a finish reason or
    usage: vLLM's `metrics`, llama.cpp's `timings`), the last value of each, for its adapter
    to read once the stream ends (`EngineAdapter.engine_times`). Runs on those chunks only,
    never on a plain content chunk."""
    for key, value in chunk.items():
        if value is not None and key not in _OPENAI_CHUNK_KEYS:
            fields = result.engine_fields
            if fields is None:
                fields = result.engine_fields = {}
            fields[key] = value


def _usage(value: object) -> Usage | None:
    """A chunk's usage block, when it is one: an engine that sends a string or a list there
    sent no usage (its counters are read by key, after the stream)."""
    # Its counters stay as the engine sent them: services/core/counts.py holds each one.
    return cast(Usage, value) if isinstance(value, dict) else None


def _timings(value: object) -> Timings | None:
    """A chunk's llama.cpp timings, when they are an object (else none)."""
    return cast(Timings, value) if isinstance(value, dict) else None


def error_message(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed)
        if isinstance(error, dict):
            for key in ("message", "detail", "msg"):
                if error.get(key):
                    return str(error[key])[:500]
        elif isinstance(error, str):
            return error[:500]
        if parsed.get("detail"):
            return str(parsed["detail"])[:500]
        if parsed.get("message"):
            return str(parsed["message"])[:500]
    return text[:500]


def _thinking(delta: ForeignJson) -> tuple[str | None, str]:
    """A thinking delta's text and key: `reasoning_content` (DeepSeek's name, kept by SGLang,
    llama.cpp and older vLLM) or `reasoning` (vLLM's since vllm#27752, which sent both for a
    while, and OpenRouter's); (None, "") otherwise."""
    for key in ("reasoning_content", "reasoning"):
        text = delta.get(key)
        if text and text.__class__ is str:
            return text, key
    return None, ""


def _text_between(data: bytes, head: bytes, tail: bytes) -> str | None:
    """The text of a chunk of the learnt shape (see Exchange._learn_shape): `data` is exactly
    `head + text + tail` and `text` holds no quote, backslash or line break; else None."""
    if not (data.startswith(head) and data.endswith(tail)):
        return None
    text = data[len(head) : len(data) - len(tail)]
    if not text or b'"' in text or b"\\" in text or b"\n" in text or b"\r" in text:
        return None
    try:
        return text.decode()
    except UnicodeDecodeError:
        return None


def _event_data(event: bytes) -> bytes | None:
    """The data of a general SSE event (several data lines, comments, event/id fields)."""
    data: list[bytes] = []
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value[:1] == b" " else value)
    return b"\n".join(data) if data else None
