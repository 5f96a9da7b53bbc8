"""What one chat completion is and what came of it: the request, the per-choice arrival
record, the result (whose figures services/core/measure.py defines) and the error classes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from time import perf_counter
from typing import Any

import orjson

from services.core.counts import HeldCounts, held_counts
from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import (
    EngineTimes,
    RequestMetrics,
    TimeSplit,
    measure_stream,
    time_split,
    token_count,
)
from services.engines import SamplingParams
from services.engines.base import Timings, Usage

#: error_class -> what it means, in plain words (shown in the UI and in reports).
ERROR_CLASSES: dict[str, str] = {
    "config": "the request could not be built (bad URL or a missing API-key variable)",
    "connect_refused": "nothing listens at that address (connection refused)",
    "dns": "the host name does not resolve",
    "tls": "the TLS (https) handshake failed",
    "connect_error": "the connection could not be opened",
    "connect_timeout": "no connection within the connect timeout",
    "read_timeout": "the engine went silent for longer than the read timeout",
    "write_timeout": "the request could not be sent in time",
    "pool_timeout": "no free connection in the client pool in time",
    "total_timeout": "the answer took longer than the request's total time limit",
    "too_large": "the answer was larger than the request's byte limit",
    "http_status": "the engine answered with an HTTP error status",
    "redirect_loop": "the engine redirected too many times",
    "bad_redirect": "the engine redirected to an address that is not http or https",
    "wrong_content_type": "the engine did not answer with an event stream",
    "invalid_json": "a stream chunk was not valid JSON",
    "stream_error": "the engine sent an error object inside the stream",
    "stream_cut": "the stream ended before the answer was complete",
    "no_content": "the stream carried no text at all",
    "protocol_error": "the HTTP exchange broke the protocol",
    "cancelled": "stopped by the user",
    "error": "an unexpected error",
}

#: Ten minutes covers a 32k-token answer at 60 tokens/s; benchmarks set their own.
DEFAULT_TOTAL_TIMEOUT_S = 600.0
#: About 200k streamed tokens of SSE (~150 bytes each): far beyond any real answer.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class ChatRequest:
    """Everything needed to send one chat completion. The API key is never held here:
    `api_key_env` names the environment variable read at send time."""

    base_url: str
    model: str
    #: OpenAI chat messages, as sent.
    messages: list[ForeignJson]
    params: SamplingParams = field(default_factory=SamplingParams)
    kind: str = "openai"
    api_key_env: str | None = None
    response_schema: ForeignJson | None = None
    schema_name: str = "answer"
    extra_body: JsonOut | None = None
    headers: dict[str, str] | None = None
    include_usage: bool = True
    #: Longest silence allowed between two reads, seconds.
    read_timeout_s: float = 300.0
    connect_timeout_s: float = 10.0
    #: Limit on the whole answer in seconds (a never-ending stream stops here).
    total_timeout_s: float | None = DEFAULT_TOTAL_TIMEOUT_S
    #: Limit on the bytes received for one answer, headers included (a stream that never
    #: ends, or one huge chunk, stops here instead of filling memory and the database).
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    def to_json(self) -> JsonOut:
        """The request as stored (JSON types), so a worker process sends what was built."""
        values = asdict(self)
        values["params"]["stop"] = list(self.params.stop)
        return values

    def prompt_digest(self) -> str:
        """A short stable digest of the messages sent: two requests with the same digest asked
        the same thing (services/bench/findings.py compares answers across distinct prompts)."""
        return hashlib.blake2b(orjson.dumps(self.messages), digest_size=8).hexdigest()

    @classmethod
    def from_json(cls, values: Any) -> ChatRequest:
        """A request as `to_json` stored it."""
        params = dict(values.get("params") or {})
        params["stop"] = tuple(params.get("stop") or ())
        return cls(**{**values, "params": SamplingParams(**params)})


@dataclass(slots=True)
class ChoiceStream:
    """One choice of the answer (n > 1 gives several), with its raw arrival record."""

    index: int
    parts: list[str] = field(default_factory=list)
    #: perf_counter of each content chunk's arrival (thinking and answer alike).
    times: list[float] = field(default_factory=list)
    finish_reason: str | None = None
    #: Positions in `parts` of the thinking chunks (`reasoning_content` / `reasoning` deltas):
    #: one list append per thinking chunk, nothing for a model that does not think.
    reasoning: list[int] = field(default_factory=list)

    @property
    def chars(self) -> list[int]:
        """The characters each content chunk carried (worked out when asked, not per chunk)."""
        return [len(part) for part in self.parts]

    @property
    def text(self) -> str:
        """The answer, without the thinking."""
        if not self.reasoning:
            return "".join(self.parts)
        marked = set(self.reasoning)
        return "".join(part for i, part in enumerate(self.parts) if i not in marked)

    @property
    def reasoning_text(self) -> str:
        return "".join(self.parts[i] for i in self.reasoning)


@dataclass(slots=True)
class StreamResult:
    """One request's outcome. Times are seconds; `start` is the perf_counter at send."""

    ok: bool = False
    start: float = 0.0
    end: float | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None
    choices: dict[int, ChoiceStream] = field(default_factory=dict)
    usage: Usage | None = None
    timings: Timings | None = None
    done: bool = False
    http_status: int | None = None
    error_class: str | None = None
    error: str | None = None
    response_id: str | None = None
    #: The engine's own top-level fields of the closing chunks (services.client.stream), and
    #: its own times read from them by its adapter when the stream ended.
    engine_fields: ForeignJson | None = None
    engine_times: EngineTimes | None = None
    #: The max_tokens asked per choice (set at send; None: the engine's default), the bound a
    #: completion count is held against (services/core/counts.py).
    max_tokens: int | None = None

    # -- answer ----------------------------------------------------------------------
    def choice(self, index: int = 0) -> ChoiceStream | None:
        return self.choices.get(index)

    @property
    def text(self) -> str:
        first = self.choices.get(0)
        return first.text if first else ""

    @property
    def texts(self) -> list[str]:
        return [self.choices[i].text for i in sorted(self.choices)]

    @property
    def reasoning_text(self) -> str:
        """Choice 0's thinking ("" for a model that does not think)."""
        first = self.choices.get(0)
        return first.reasoning_text if first else ""

    @property
    def finish_reason(self) -> str | None:
        first = self.choices.get(0)
        return first.finish_reason if first else None

    # -- figures (services/core/measure.py defines them) ----------------------------------
    def _ordered(self) -> list[ChoiceStream]:
        return [self.choices[i] for i in sorted(self.choices)]

    def metrics(self) -> RequestMetrics:
        """TTFT, per-token ITL, TPOT, E2E and token counts of the stream so far, the usage held
        against the streamed text (services/core/counts.py)."""
        ordered = self._ordered()
        return measure_stream(
            self.start,
            ordered,
            self.usage,
            self.timings,
            texts=[choice.parts for choice in ordered],
            max_tokens=self.max_tokens,
        )

    def counts(self) -> HeldCounts:
        """The token counts alone (what `metrics()` reports of them, without the timing)."""
        ordered = self._ordered()
        return held_counts(
            self.usage,
            self.timings,
            sum(len(choice.times) for choice in ordered),
            [choice.parts for choice in ordered],
            self.max_tokens,
        )

    def time_split(self, figures: RequestMetrics | None = None) -> TimeSplit | None:
        """Where this request's time went, by its engine's own times (None: not reported)."""
        figures = figures or self.metrics()
        return time_split(figures.ttft_s, figures.e2e_s, self.engine_times)

    @property
    def prompt_tokens(self) -> int | None:
        return self.counts().prompt_tokens

    @property
    def completion_tokens(self) -> int | None:
        return self.counts().completion_tokens

    @property
    def cached_tokens(self) -> int | None:
        return self.counts().cached_tokens

    @property
    def output_tokens(self) -> int:
        return self.counts().output_tokens

    def answer_digest(self) -> str:
        """A short stable digest of the whole answer (every choice, thinking included): two
        answers with the same digest are the same text. Stable across processes (not hash())."""
        digest = hashlib.blake2b(digest_size=8)
        for choice in self._ordered():
            digest.update("".join(choice.parts).encode("utf-8", "replace") + b"\x00")
        return digest.hexdigest()

    def summary(self) -> JsonOut:
        """Plain JSON-able figures (for storage and reports)."""
        figures = self.metrics()
        return {
            "ok": self.ok,
            "ttft_s": figures.ttft_s,
            "e2e_s": figures.e2e_s,
            "tpot_s": figures.tpot_s,
            "itl_mean_s": figures.itl_mean_s,
            "itl_p90_s": figures.itl_p90_s,
            "output_tokens": figures.output_tokens,
            "prompt_tokens": figures.prompt_tokens,
            "completion_tokens": figures.completion_tokens,
            "cached_tokens": figures.cached_tokens,
            "ttfat_s": figures.ttfat_s,
            "reasoning_tokens": figures.reasoning_tokens,
            "reasoning_tokens_source": figures.reasoning_tokens_source,
            "answer_tokens": figures.answer_tokens,
            "ttft_includes_reasoning": figures.ttft_includes_reasoning,
            "finish_reason": self.finish_reason,
            "http_status": self.http_status,
            "error_class": self.error_class,
            "error": self.error,
        }


#: Called for each content delta: (choice index, text delta, the result so far).
DeltaCallback = Callable[[int, str, StreamResult], None]


def merge_choice_usage(first: Usage, second: Usage) -> Usage:
    """Usage of a stream that reports each choice separately: completions add up, the
    prompt (the same for every choice) counts once."""
    completion = (token_count(first.get("completion_tokens")) or 0) + (
        token_count(second.get("completion_tokens")) or 0
    )
    prompt = max(
        token_count(first.get("prompt_tokens")) or 0, token_count(second.get("prompt_tokens")) or 0
    )
    merged: Usage = {
        **first,
        "completion_tokens": completion,
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
    }
    merged["usage_reports"] = usage_reports(first) + 1
    return merged


def usage_reports(usage: Usage) -> int:
    """How many per-choice usage blocks `usage` adds up (1: an engine's own block)."""
    reports = usage.get("usage_reports")
    return reports if isinstance(reports, int) and not isinstance(reports, bool) else 1


def fail_result(result: StreamResult, error_class: str, message: str) -> StreamResult:
    """Mark `result` failed with one of `ERROR_CLASSES` and a plain-words message."""
    result.ok = False
    result.error_class = error_class
    result.error = message
    if result.end is None:
        result.end = perf_counter()
    return result
