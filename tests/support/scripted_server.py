"""A scripted OpenAI-compatible server for exact timings and faults on demand.

Written on raw asyncio (no web framework) so that its own cost per token is a few
microseconds and it can hold 512 streams at once on two cores, and meant to run in a
PROCESS of its own (`ScriptedServer` starts it with subprocess) so that it never shares
an event loop or the GIL with the client it measures.

The scenario of each request comes from the model name (or the `x-scripted` header,
same syntax), for example ``scripted:ttft=50,itl=10,tokens=64,tpc=2,fault=cut``:

| key | default | meaning |
|---|---|---|
| ttft | 20 | ms from the request to the first content chunk |
| itl | 5 | ms between tokens (a chunk of `tpc` tokens follows the previous after tpc*itl) |
| tokens | 16 | completion tokens per choice (the request's max_tokens caps it) |
| spread | 0 | each request draws its own TTFT (ttft x lognormal(0, spread)) and ITL (itl x lognormal(0, spread/3)), so a run has the request-to-request spread of a real engine; the nth request of one scenario always draws the same |
| think | 0 | thinking tokens sent before those, as `rkey` deltas (max_tokens caps both together) |
| rkey | reasoning_content | the thinking delta's key (`reasoning` as current vLLM sends it) |
| rusage | 1 | 0: no `completion_tokens_details.reasoning_tokens` in the usage |
| cap | 1 | 0: ignore the request's max_tokens (a peer tool whose chat data always asks for 30) |
| tpc | 1 | tokens per SSE chunk |
| first | tpc | tokens in the first content chunk (later chunks carry tpc) |
| empty | 0 | 1: an empty-content chunk (`"content": ""`) after every content chunk |
| usage | auto | 1/0: usage trailer; auto follows `stream_options.include_usage` |
| prompt | auto | prompt_tokens reported (auto: words in the messages) |
| cached | 0 | cached prompt tokens reported (`prompt_tokens_details` and llama.cpp `timings.cache_n`) |
| finish | stop | finish_reason sent ("length" when max_tokens capped the answer) |
| salt | 0 | shifts the word cycle so two "engines" answer differently |
| vary | 0 | 1: the words depend on the prompt (by default every prompt gets the same answer, as a cache in front of a broken model would give) |
| ctok | | completion_tokens the usage reports per choice, whatever was streamed (a lying counter; may be negative) |
| fault | none | see below |
| at | tokens/2 | token index where a mid-stream fault happens |
| every | 1 | the fault hits one request in `every` of this scenario (the nth, counted from 0 with warm-up requests, where n % every == every // 2: mid-run), the others are served without it |
| status | 500 | HTTP status for fault=http |
| body | json | fault=http body: json, text, none, or file:NAME (a file in the replay folder, as is) |
| delay | 1000 | ms for fault=slow_headers and fault=stall |
| size | 1000000 | characters of fault=huge's one chunk |
| replay | | a file name in the replay folder, streamed verbatim event by event every itl ms |
| report | | the engine's own times in its shape: vllm (`metrics` on the usage chunk), llamacpp (`timings.prompt_ms`/`predicted_ms`), tgi (`x-queue-time`/`x-inference-time` headers) |
| etimes | | the times reported, ms `queue:prefill:decode` (default: measured, queue = the wait for a slot, prefill = slot taken -> first write, decode = first -> last write; tgi: the scenario's ttft and itl) |
| logas | | keep the server's own timing record of each such request under this id, as the `x-scripted-id` header does (for a client that sends no headers of its own: the Playground) |
| canned | 0 | 1 (with ttft=0, itl=0, no fault): the stream's body is built once and every later request with the same answer gets those bytes in one write, its id included; the server's cost per token is then next to nothing, so a client's capacity is measured alone |

Faults: none, slow_headers, stall, cut (connection closed mid-stream), cut_before_done
(finish_reason and usage sent, then closed without [DONE]), invalid_json, error_in_stream
(an error object inside the 200 stream), http (status/body above), huge, endless,
wrong_content_type, redirect_loop, ignore_schema (plain text even when a JSON schema is
asked), usage_only (no content at all, only the usage trailer).

With a `response_format` json_schema the answer is a JSON instance of the schema split
into tokens (unless fault=ignore_schema).

Besides /v1/chat/completions: /v1/models, /health, /metrics (vLLM-style Prometheus
text), /version, POST /v1/tokenize (SGLang's request and answer, one token per word), and for tests /_scripted/log?id=ID: the server's own perf_counter
times (received, each chunk write with its token count) of a request sent with header
`x-scripted-id: ID`. perf_counter is CLOCK_MONOTONIC on Linux, shared by processes, so
these times compare directly with the client's.

What the server says about itself can be set, for tests of untrusted text: `--served-model`
(the id /v1/models lists and /metrics labels carry) and `--version` (/version). `--dialect`
(vllm, sglang, llamacpp, triton) has it speak that engine's /metrics, `owned_by` and its own
settings paths (/props, /server_info, /v2), and `--slots N` puts a real queue behind N slots
(tests/support/scripted_dialects.py): the evidence an explanation reads, with a known truth.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import parse_qs, urlsplit

try:
    from tests.support.scripted_dialects import DIALECTS, OWNED_BY, Served, info_routes, metrics_text
except ModuleNotFoundError:  # run as a script (a tune template's command line): its folder is the path
    from scripted_dialects import (  # type: ignore[no-redef]
        DIALECTS,
        OWNED_BY,
        Served,
        info_routes,
        metrics_text,
    )

if TYPE_CHECKING:
    from services.bench.spec import EngineTarget

WORDS = (" red", " fox", " sky", " sea", " sun", " oak", " elm", " ash", " ivy", " bay", " cod", " jay")
SERVER_MODEL = "scripted"

# ---------------------------------------------------------------------------------------
# Scenario parsing (shared by the server and by tests that build model names)
# ---------------------------------------------------------------------------------------

_INT_KEYS = {
    "tokens",
    "think",
    "rusage",
    "cap",
    "tpc",
    "first",
    "empty",
    "prompt",
    "cached",
    "salt",
    "vary",
    "ctok",
    "at",
    "status",
    "size",
    "canned",
    "every",
}
_FLOAT_KEYS = {"ttft", "itl", "delay", "spread"}


@dataclass
class Scenario:
    ttft: float = 20.0
    itl: float = 5.0
    tokens: int = 16
    spread: float = 0.0
    think: int = 0
    rkey: str = "reasoning_content"
    rusage: int = 1
    cap: int = 1
    tpc: int = 1
    first: int | None = None
    empty: int = 0
    usage: str = "auto"
    prompt: int | None = None
    cached: int = 0
    finish: str = "stop"
    salt: int = 0
    vary: int = 0
    ctok: int | None = None
    fault: str = "none"
    at: int | None = None
    every: int = 1
    status: int = 500
    body: str = "json"
    delay: float = 1000.0
    size: int = 1_000_000
    replay: str = ""
    canned: int = 0
    logas: str = ""
    report: str = ""
    etimes: str = ""

    @classmethod
    def parse(cls, spec: str | None) -> Scenario:
        scenario = cls()
        if not spec:
            return scenario
        if spec.startswith("scripted"):
            spec = spec[len("scripted") :].lstrip(":")
        for part in spec.split(","):
            key, _, value = part.strip().partition("=")
            if not key:
                continue
            if key in _INT_KEYS:
                setattr(scenario, key, int(value))
            elif key in _FLOAT_KEYS:
                setattr(scenario, key, float(value))
            elif hasattr(scenario, key):
                setattr(scenario, key, value)
            else:
                raise ValueError(f"unknown scenario key {key!r}")
        scenario.tpc = max(1, scenario.tpc)
        if scenario.canned and (scenario.ttft or scenario.itl or scenario.fault != "none"):
            raise ValueError("canned=1 needs ttft=0, itl=0 and no fault (the bytes are sent at once)")
        return scenario


def scripted_engine(server: ScriptedServer, **scenario: Any) -> EngineTarget:
    """The scripted server as a benchmark target (an EngineTarget), its scenario in the model
    name: TTFT 10 ms, ITL 2 ms and 16 tokens unless `scenario` says otherwise."""
    from services.bench.spec import EngineTarget

    return EngineTarget(
        name="scripted",
        base_url=server.base_url,
        kind="vllm",
        model=server.model(**{"ttft": 10, "itl": 2, "tokens": 16, **scenario}),
    )


def log_id_header(tag: str, index: int) -> dict[str, str]:
    """The header that has the server log request `index` under `tag + index` (for
    /_scripted/log). A module-level function, so `functools.partial(log_id_header, tag)`
    travels to load-generator worker processes."""
    return {"x-scripted-id": f"{tag}{index}"}


def timing_errors(server: ScriptedServer, outcome: Any, tag: str) -> tuple[list[float], list[float]]:
    """A load's measured records (sent with `log_id_header(tag, ...)` headers) against the
    server's own record of each write: per request the first-token time minus the first write,
    per token the measured gap minus the server's gap between the writes. Signed: the server
    stamps a write just after making it, so an error can be a few µs below 0."""
    ttft: list[float] = []
    itl: list[float] = []
    for record in outcome.measured:
        log = server.log(f"{tag}{record.index}")
        assert log is not None, f"the server logged no request {tag}{record.index}"
        writes = log["writes"]
        assert len(record.itl_s) == len(writes) - 1, (record.index, len(record.itl_s), len(writes))
        ttft.append(outcome.origin + record.start_s + record.ttft_s - writes[0])
        itl.extend(gap - (b - a) for gap, a, b in zip(record.itl_s, writes, writes[1:]))
    return ttft, itl


def _scripted_times(scenario: Scenario) -> tuple[float, float, float] | None:
    """The `etimes` of a scenario (ms queue, prefill, decode), None when measured."""
    if not scenario.etimes:
        return None
    queue, prefill, decode = (float(part) for part in scenario.etimes.split(":"))
    return queue, prefill, decode


def _reported_fields(
    scenario: Scenario,
    timings: dict[str, Any],
    received: float,
    first: float,
    last: float,
    queued_s: float = 0.0,
) -> dict[str, Any]:
    """The usage chunk's engine fields: llama.cpp's `timings` always (its counts), with the
    times for report=llamacpp; vLLM's `metrics` for report=vllm."""
    times = _scripted_times(scenario) or (
        queued_s * 1000,
        (first - received) * 1000,
        (last - first) * 1000,
    )
    queue, prefill, decode = times
    if scenario.report == "llamacpp":
        return {"timings": {**timings, "prompt_ms": prefill, "predicted_ms": decode}}
    if scenario.report == "vllm":
        metrics = {
            "queue_time_ms": queue,
            "time_to_first_token_ms": prefill,
            "generation_time_ms": decode,
        }
        return {"timings": timings, "metrics": metrics}
    return {"timings": timings}


def _reported_headers(scenario: Scenario, tokens: int, prompt_tokens: int) -> dict[str, str]:
    """TGI's timing headers for report=tgi, whole ms as TGI writes them."""
    if scenario.report != "tgi":
        return {}
    scripted = _scripted_times(scenario)
    queue, inference = (
        (scripted[0], scripted[1] + scripted[2])
        if scripted
        else (0.0, scenario.ttft + max(0, tokens - 1) * scenario.itl)
    )
    return {
        "x-queue-time": str(round(queue)),
        "x-inference-time": str(round(inference)),
        "x-time-per-token": str(round(inference / max(1, tokens))),
        "x-prompt-tokens": str(prompt_tokens),
        "x-generated-tokens": str(tokens),
    }


def scenario_model(**values: Any) -> str:
    """The model name that asks the server for a scenario: scenario_model(ttft=50, fault="cut")."""
    return "scripted:" + ",".join(f"{key}={value}" for key, value in values.items())


# ---------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------


@dataclass
class _Counters(Served):
    log: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Requests seen per scenario with a spread: the nth one's draws are seeded by both.
    drawn: dict[str, int] = field(default_factory=dict)
    #: Requests seen per scenario with `every`: which of them the fault hits.
    faulted: dict[str, int] = field(default_factory=dict)


_REASONS = {
    200: "OK",
    307: "Temporary Redirect",
    400: "Bad Request",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _schema_instance(schema: Any) -> Any:
    """A small valid instance of a JSON schema (enough for the schema mode of the playground)."""
    if not isinstance(schema, dict):
        return "x"
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _schema_instance(sub) for name, sub in properties.items()}
    if kind == "array":
        return [_schema_instance(schema.get("items") or {})] * max(1, int(schema.get("minItems", 1)))
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1.5))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "red fox"


def _split_text(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass(frozen=True)
class Identity:
    """What the server reports about itself."""

    served_model: str = SERVER_MODEL
    version: str = "scripted-1.0"
    #: Whose words it speaks on /metrics and about itself (tests/support/scripted_dialects.py).
    dialect: str = "vllm"
    #: Requests it runs at once; one beyond them waits for a slot to free (0: no limit).
    slots: int = 0


class _Kept:
    """A stream writer that keeps what is written: a canned stream's body, built once."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.transport = self

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def is_closing(self) -> bool:
        return False

    async def drain(self) -> None:
        return None


class ScriptedHandler:
    def __init__(self, replay_dir: Path | None, identity: Identity = Identity()) -> None:
        self.replay_dir = replay_dir
        self.identity = identity
        self.counters = _Counters()
        self.loop = asyncio.get_event_loop()
        self.canned: dict[tuple[Any, ...] | None, bytes] = {}
        self.slots = asyncio.Semaphore(identity.slots) if identity.slots > 0 else None
        self.info = info_routes(
            identity.dialect, identity.served_model, identity.version, identity.slots
        )

    # -- HTTP plumbing ----------------------------------------------------------------

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    first = await reader.readexactly(1)
                    if first not in b"GPHDOC":  # not HTTP (a TLS hello, say): answer like a plain server
                        writer.write(
                            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        )
                        return
                    head = first + await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                received = time.perf_counter()
                lines = head.decode("latin-1").split("\r\n")
                method, target, _version = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                body = await reader.readexactly(length) if length else b""
                keep = await self.route(method, target, headers, body, writer, received)
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001, S110 - the client may have gone; closing is best effort
                pass

    @staticmethod
    def _head(
        status: int, content_type: str, extra: dict[str, str] | None = None, length: int | None = None
    ) -> bytes:
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            f"content-type: {content_type}",
            "server: scripted",
        ]
        if length is None:
            lines.append("transfer-encoding: chunked")
        else:
            lines.append(f"content-length: {length}")
        for key, value in (extra or {}).items():
            lines.append(f"{key}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def _plain(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: bytes | str,
        content_type: str = "application/json",
        extra: dict[str, str] | None = None,
    ) -> bool:
        data = body.encode() if isinstance(body, str) else body
        writer.write(self._head(status, content_type, extra, length=len(data)) + data)
        return True

    async def route(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
        received: float,
    ) -> bool:
        url = urlsplit(target)
        path = url.path.rstrip("/")
        if method == "POST" and path in ("/v1/chat/completions", "/chat/completions"):
            return await self.chat(headers, body, writer, received, target)
        if method == "GET" and path == "/v1/models":
            models = {
                "object": "list",
                "data": [
                    {
                        "id": self.identity.served_model,
                        "object": "model",
                        "owned_by": OWNED_BY[self.identity.dialect],
                        "max_model_len": 8192,
                    }
                ],
            }
            return self._plain(writer, 200, json.dumps(models))
        if method == "GET" and path == "/health":
            return self._plain(writer, 200, '{"status":"ok"}')
        if method == "GET" and path == "/version":
            return self._plain(writer, 200, json.dumps({"version": self.identity.version}))
        if method == "GET" and path in self.info:
            return self._plain(writer, 200, self.info[path])
        if method == "GET" and path == "/metrics":
            return self._plain(
                writer, 200, self.metrics_text(), "text/plain; version=0.0.4; charset=utf-8"
            )
        if method == "POST" and path == "/v1/tokenize":
            # SGLang's shape (TokenizeRequest -> TokenizeResponse); one token per word.
            try:
                prompt = json.loads(body)["prompt"]
            except (ValueError, KeyError, TypeError):
                return self._plain(writer, 422, json.dumps({"detail": "prompt is required"}))
            tokens = [len(word) for word in str(prompt).split()]
            return self._plain(
                writer, 200, json.dumps({"tokens": tokens, "count": len(tokens), "max_model_len": 8192})
            )
        if method == "GET" and path == "/_scripted/log":
            wanted = parse_qs(url.query).get("id", [""])[0]
            return self._plain(writer, 200, json.dumps(self.counters.log.get(wanted)))
        if method == "POST" and path == "/_scripted/reset":
            self.counters.log.clear()
            return self._plain(writer, 200, "{}")
        return self._plain(
            writer, 404, json.dumps({"error": {"message": f"no route {method} {path}", "code": 404}})
        )

    def metrics_text(self) -> str:
        identity = self.identity
        return metrics_text(identity.dialect, self.counters, identity.served_model, identity.slots)

    # -- chat completions -------------------------------------------------------------

    async def chat(
        self,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
        received: float,
        target: str,
    ) -> bool:
        try:
            request = json.loads(body or b"{}")
            scenario = Scenario.parse(headers.get("x-scripted") or str(request.get("model") or ""))
        except ValueError as error:
            return self._plain(
                writer, 400, json.dumps({"error": {"message": f"bad request: {error}", "code": 400}})
            )
        if scenario.spread > 0:
            # Seeded by the scenario and the request's place: one scenario's runs draw the same
            # times whatever order its concurrent requests arrive in.
            spec = headers.get("x-scripted") or str(request.get("model") or "")
            nth = self.counters.drawn.get(spec, 0)
            self.counters.drawn[spec] = nth + 1
            draws = random.Random(f"{spec}#{nth}")
            scenario.ttft *= draws.lognormvariate(0.0, scenario.spread)
            scenario.itl *= draws.lognormvariate(0.0, scenario.spread / 3)
        if scenario.every > 1:
            # One request in `every` of this scenario meets its fault (a stall in 50, say).
            spec = headers.get("x-scripted") or str(request.get("model") or "")
            nth = self.counters.faulted.get(spec, 0)
            self.counters.faulted[spec] = nth + 1
            if nth % scenario.every != scenario.every // 2:
                scenario.fault = "none"
        log_id = headers.get("x-scripted-id") or scenario.logas
        record: dict[str, Any] | None = None
        if log_id:
            record = {"received": received, "writes": [], "tokens": []}
            self.counters.log[log_id] = record
        fault = scenario.fault
        if fault == "slow_headers":
            await asyncio.sleep(scenario.delay / 1000)
        if fault == "http":
            payloads = {
                "json": json.dumps(
                    {
                        "error": {
                            "message": f"scripted failure {scenario.status}",
                            "type": "server_error",
                            "code": scenario.status,
                        }
                    }
                ),
                "text": f"scripted failure {scenario.status}",
                "none": "",
            }
            content_type = "application/json" if scenario.body == "json" else "text/plain"
            body_text = payloads.get(scenario.body, "")
            if scenario.body.startswith("file:") and self.replay_dir is not None:
                body_text = (self.replay_dir / scenario.body[len("file:") :]).read_text()
            return self._plain(writer, scenario.status, body_text, content_type)
        if fault == "redirect_loop":
            return self._plain(writer, 307, "", "text/plain", {"location": target})
        if fault == "wrong_content_type":
            return self._plain(writer, 200, "<html><body>not an API</body></html>", "text/html")

        n = int(request.get("n") or 1)
        prompt_tokens = (
            scenario.prompt
            if scenario.prompt is not None
            else sum(
                len(str(m.get("content") or "").split()) + 4
                for m in request.get("messages") or []
                if isinstance(m, dict)
            )
        )
        max_tokens = request.get("max_completion_tokens") or request.get("max_tokens")
        tokens = scenario.think + scenario.tokens
        finish = scenario.finish
        if scenario.cap and isinstance(max_tokens, int) and 0 < max_tokens < tokens:
            tokens, finish = max_tokens, "length"
        thinking = min(scenario.think, tokens)
        schema_text = None
        response_format = request.get("response_format")
        if isinstance(response_format, dict) and fault != "ignore_schema":
            if response_format.get("type") == "json_schema":
                schema = (response_format.get("json_schema") or {}).get("schema")
                schema_text = json.dumps(_schema_instance(schema))
            elif response_format.get("type") == "json_object":
                schema_text = '{"answer": "red fox"}'
        pieces = _split_text(schema_text) if schema_text is not None else None
        if pieces is not None:
            tokens, finish = len(pieces), "stop"
        stream = bool(request.get("stream"))
        want_usage = scenario.usage == "1" or (
            scenario.usage == "auto" and bool((request.get("stream_options") or {}).get("include_usage"))
        )
        cid = f"chatcmpl-scripted-{id(writer):x}{int(received * 1e6) % 1000000}"
        self.counters.requests += 1
        self.counters.prompt_tokens += prompt_tokens
        self.counters.cached_tokens += scenario.cached

        # vary=1: a word sequence of the prompt's own (crc32: the same in every server process).
        varied = (
            random.Random(zlib.crc32(json.dumps(request.get("messages")).encode()))
            if scenario.vary
            else None
        )
        shifts = [varied.randrange(len(WORDS)) for _ in range(tokens)] if varied else []

        def token_text(choice: int, index: int) -> str:
            if pieces is not None:
                return pieces[index]
            shift = shifts[index] if index < len(shifts) else 0
            return WORDS[(index + scenario.salt + choice * 5 + shift) % len(WORDS)]

        claimed = scenario.ctok * n if scenario.ctok is not None else tokens * n
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": claimed,
            "total_tokens": prompt_tokens + claimed,
            "prompt_tokens_details": {"cached_tokens": scenario.cached},
        }
        if thinking and scenario.rusage:
            usage["completion_tokens_details"] = {"reasoning_tokens": thinking * n}
        timings = {
            "cache_n": scenario.cached,
            "prompt_n": prompt_tokens - scenario.cached,
            "predicted_n": tokens * n,
        }

        queued_s = 0.0
        if self.slots is not None:
            # A real queue: beyond its slots a request waits, counted as waiting, for one to free.
            self.counters.waiting += 1
            try:
                await self.slots.acquire()
            finally:
                self.counters.waiting -= 1
            queued_s = time.perf_counter() - received
        try:
            if not stream:
                await asyncio.sleep((scenario.ttft + max(0, tokens - 1) * scenario.itl) / 1000)
                answer = {
                    "id": cid,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": request.get("model"),
                    "choices": [
                        {
                            "index": c,
                            "message": {
                                "role": "assistant",
                                "content": "".join(token_text(c, i) for i in range(thinking, tokens)),
                                **(
                                    {scenario.rkey: "".join(token_text(c, i) for i in range(thinking))}
                                    if thinking
                                    else {}
                                ),
                            },
                            "finish_reason": finish,
                        }
                        for c in range(n)
                    ],
                    "usage": usage,
                    "timings": timings,
                }
                self.counters.generation_tokens += tokens * n
                return self._plain(writer, 200, json.dumps(answer))

            writer.write(
                self._head(
                    200,
                    "text/event-stream",
                    {"cache-control": "no-cache", **_reported_headers(scenario, tokens, prompt_tokens)},
                )
            )
            self.counters.running += 1
            try:
                if scenario.replay:
                    return await self._replay(scenario, writer, received, record)
                # The whole scenario is in the key: with the `x-scripted` header it is not in the model.
                canned_key = (
                    (dataclasses.astuple(scenario), request.get("model"), n, tokens, finish)
                    + (want_usage, prompt_tokens, schema_text, tuple(shifts))
                    if scenario.canned and record is None
                    else None
                )
                if canned_key in self.canned:
                    writer.write(self.canned[canned_key])
                    self.counters.generation_tokens += tokens * n
                    return True
                kept = _Kept() if canned_key else None
                done = await self._stream(
                    scenario,
                    kept or writer,  # type: ignore[arg-type]  # duck-typed: write, transport, drain
                    received + queued_s,  # its clock starts when a slot takes it
                    record,
                    n,
                    tokens,
                    finish,
                    want_usage,
                    usage,
                    timings,
                    cid,
                    str(request.get("model")),
                    token_text,
                    queued_s=queued_s,
                )
                if kept is not None and canned_key is not None:
                    self.canned[canned_key] = b"".join(kept.parts)
                    writer.write(self.canned[canned_key])
                return done
            except (ConnectionError, asyncio.CancelledError):
                return False
            finally:
                self.counters.running -= 1
        finally:
            if self.slots is not None:
                self.slots.release()

    @staticmethod
    def _frame(payload: bytes) -> bytes:
        return b"%x\r\n%s\r\n" % (len(payload), payload)

    def _event(self, obj: Any) -> bytes:
        return self._frame(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")

    async def _sleep_until(self, target: float) -> None:
        delay = target - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)

    async def _stream(
        self,
        scenario: Scenario,
        writer: asyncio.StreamWriter,
        received: float,
        record: dict[str, Any] | None,
        n: int,
        tokens: int,
        finish: str,
        want_usage: bool,
        usage: dict[str, Any],
        timings: dict[str, Any],
        cid: str,
        model: str,
        token_text: Any,
        queued_s: float = 0.0,
    ) -> bool:
        fault = scenario.fault
        at = scenario.at if scenario.at is not None else tokens // 2
        created = int(time.time())
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}

        def chunk(choices: list[dict[str, Any]], **more: Any) -> bytes:
            return self._event({**base, "choices": choices, **more})

        # The role chunk comes at once and carries no content: TTFT must not start on it.
        writer.write(
            chunk(
                [
                    {"index": c, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                    for c in range(n)
                ]
            )
        )
        first = received + scenario.ttft / 1000
        sent = 0
        chunk_no = 0
        total = (
            tokens if fault not in ("endless", "usage_only") else (10**9 if fault == "endless" else 0)
        )
        first_count = max(1, scenario.first if scenario.first is not None else scenario.tpc)
        stalled = False
        wrote = [received, received]  # the first and the last content write (report=...)
        while sent < total:
            if fault == "stall" and not stalled and sent >= at:
                stalled = True
                first += scenario.delay / 1000
            # Each chunk follows the previous one by its own tokens' inter-token latencies.
            count = min(first_count if chunk_no == 0 else scenario.tpc, total - sent)
            if sent < scenario.think:  # a chunk is all thinking or all answer
                count = min(count, scenario.think - sent)
            key = scenario.rkey if sent < scenario.think else "content"
            await self._sleep_until(first + max(0, sent + count - first_count) * scenario.itl / 1000)
            if writer.transport.is_closing():  # the client went away: stop generating
                return False
            if fault == "cut" and sent >= at:
                await writer.drain()
                writer.transport.abort()
                return False
            if fault == "invalid_json" and sent >= at:
                writer.write(
                    self._frame(b'data: {"choices": [{"index": 0, "delta": {"content": "br\n\n')
                )
                fault = "none"
            if fault == "error_in_stream" and sent >= at:
                writer.write(
                    self._event(
                        {
                            "error": {
                                "message": "scripted engine error mid-stream",
                                "type": "internal_error",
                                "code": 500,
                            }
                        }
                    )
                )
                writer.write(self._frame(b"data: [DONE]\n\n") + b"0\r\n\r\n")
                return True
            if fault == "huge":
                text = "x" * scenario.size
                fault = "none"
                writer.write(
                    chunk(
                        [
                            {"index": c, "delta": {"content": text}, "finish_reason": None}
                            for c in range(n)
                        ]
                    )
                )
                await writer.drain()
            else:
                writer.write(
                    chunk(
                        [
                            {
                                "index": c,
                                "delta": {key: "".join(token_text(c, sent + k) for k in range(count))},
                                "finish_reason": None,
                            }
                            for c in range(n)
                        ]
                    )
                )
                if scenario.empty:
                    writer.write(
                        chunk(
                            [
                                {"index": c, "delta": {"content": ""}, "finish_reason": None}
                                for c in range(n)
                            ]
                        )
                    )
            if record is not None:
                record["writes"].append(time.perf_counter())
                record["tokens"].append(count)
            wrote[1] = time.perf_counter()
            if not sent:
                wrote[0] = wrote[1]
            sent += count
            chunk_no += 1
            self.counters.generation_tokens += count * n
            if fault == "endless" and chunk_no % 64 == 0:
                await writer.drain()
        if fault == "usage_only":
            await self._sleep_until(first)
            usage = {**usage, "completion_tokens": 0, "total_tokens": usage["prompt_tokens"]}
        else:
            writer.write(chunk([{"index": c, "delta": {}, "finish_reason": finish} for c in range(n)]))
        if want_usage or fault == "usage_only":
            writer.write(
                chunk([], usage=usage, **_reported_fields(scenario, timings, received, *wrote, queued_s))
            )
        if fault == "cut_before_done":
            await writer.drain()
            writer.transport.abort()
            return False
        writer.write(self._frame(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        if record is not None:
            record["done"] = time.perf_counter()
        self.counters.finished(queued_s, wrote[0] - received, wrote[1] - wrote[0])
        return True

    async def _replay(
        self,
        scenario: Scenario,
        writer: asyncio.StreamWriter,
        received: float,
        record: dict[str, Any] | None,
    ) -> bool:
        if self.replay_dir is None:
            raise ConnectionError("no replay folder")
        path = (self.replay_dir / scenario.replay).resolve()
        events = [e for e in path.read_bytes().replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]
        start = received + scenario.ttft / 1000
        for index, event in enumerate(events):
            await self._sleep_until(start + index * scenario.itl / 1000)
            if writer.transport.is_closing():
                return False
            writer.write(self._frame(event.strip(b"\n") + b"\n\n"))
            if record is not None:
                record["writes"].append(time.perf_counter())
                record["tokens"].append(1)
        # A recording that ends without [DONE] was cut: end the connection the same way.
        if not events or events[-1].strip() != b"data: [DONE]":
            await writer.drain()
            writer.transport.abort()
            return False
        writer.write(b"0\r\n\r\n")
        return True


async def serve(
    host: str, port: int, replay_dir: Path | None, ready: Any = None, identity: Identity = Identity()
) -> None:
    handler = ScriptedHandler(replay_dir, identity)
    server = await asyncio.start_server(handler.handle, host, port, backlog=2048, limit=2**20)
    # SIGTERM closes the server quietly (a sys.exit inside the loop would print a traceback).
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, server.close)
    bound = server.sockets[0].getsockname()[1]
    if ready is not None:
        ready(bound)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--replay-dir", type=Path)
    parser.add_argument("--served-model", default=SERVER_MODEL)
    parser.add_argument("--version", default=Identity.version)
    parser.add_argument("--dialect", choices=DIALECTS, default=Identity.dialect)
    parser.add_argument("--slots", type=int, default=Identity.slots)
    args = parser.parse_args(argv)
    identity = Identity(args.served_model, args.version, args.dialect, args.slots)

    def ready(port: int) -> None:
        print(f"PORT {port}", flush=True)

    try:
        asyncio.run(serve(args.host, args.port, args.replay_dir, ready, identity))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    return 0


# ---------------------------------------------------------------------------------------
# Driving it from tests and benchmarks
# ---------------------------------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_REPLAY_DIR = (REPO_ROOT.parent / "shared" / "fixtures" / "streams").resolve()


class ScriptedServer:
    """The scripted server in a child process: `with ScriptedServer() as server: server.base_url`."""

    def __init__(
        self, replay_dir: Path | None = DEFAULT_REPLAY_DIR, identity: Identity = Identity()
    ) -> None:
        self.replay_dir = replay_dir
        self.identity = identity
        self.process: subprocess.Popen[str] | None = None
        self.port: int | None = None

    @property
    def base_url(self) -> str:
        """With /v1, as users paste it."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def model(**values: Any) -> str:
        return scenario_model(**values)

    def start(self) -> ScriptedServer:
        command = [sys.executable, "-m", "tests.support.scripted_server"]
        if self.replay_dir is not None:
            command += ["--replay-dir", str(self.replay_dir)]
        command += ["--served-model", self.identity.served_model, "--version", self.identity.version]
        command += ["--dialect", self.identity.dialect, "--slots", str(self.identity.slots)]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self.process = subprocess.Popen(
            command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"scripted server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None

    def log(self, request_id: str) -> dict[str, Any] | None:
        """The server's own timing record of a request sent with header x-scripted-id."""
        import httpx2

        answer = httpx2.get(f"{self.root_url}/_scripted/log", params={"id": request_id}, timeout=10)
        answer.raise_for_status()
        return answer.json()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


if __name__ == "__main__":
    raise SystemExit(main())
