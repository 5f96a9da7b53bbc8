"""Per-request metrics of one streamed answer, and the one percentile: the Playground,
`shootout ask`, load benchmarks, demos and the importers' recomputation all read their
figures from here, so one stream gives one set of numbers wherever it is shown.

Inputs are what the client records (services/client/): the perf_counter at send, and per
choice the arrival time of each content chunk and the characters it carried, plus the
engine's usage trailer (and llama.cpp's `timings`). Definitions (docs/measuring.md, "The figures
of one request"):

- TTFT: send -> first chunk that carries content (a role-only chunk is not a token).
- E2E: send -> last content chunk (the usage trailer after it does not extend it).
- Tokens per chunk: one each when the usage count agrees with the chunks (the usual case);
  otherwise the usage's completion tokens (once held against the stream, else the stream's own
  count) shared by text length with largest remainders, so the counts add up exactly to the
  output tokens. Speculative decoding and the
  stream intervals of TensorRT-LLM and SGLang send several tokens per chunk routinely.
- ITL: one gap per output token after the first. A later chunk of k tokens that came g
  seconds after the previous one gives k gaps of g/k; the first chunk's extra tokens came
  with the first token and give gaps of 0; a chunk that carried no token moves time on to
  the next token's gap. So sum(ITL) = E2E - TTFT and len(ITL) = output tokens - 1, which
  makes mean(ITL) = TPOT: a dashboard never shows two inter-token figures for one stream.
- TPOT: (E2E - TTFT) / (output tokens - 1), as vLLM's benchmark defines it.
- With n > 1 choices, ITL and TPOT are those of choice 0 (its share of the completion
  tokens); TTFT and E2E span all choices.
- Cached prompt tokens: `usage.prompt_tokens_details.cached_tokens`, else llama.cpp's
  `timings.cache_n`.
- Token counts are held against the stream first (services/core/counts.py): a usage counter
  the streamed text refutes, or one no answer can have (below 0, cached above the prompt,
  completion above the max_tokens asked), is refused and the stream's own count used.
- Reasoning: a delta whose text is in `reasoning_content` or `reasoning` (vLLM, SGLang,
  llama.cpp, DeepSeek) is a thinking chunk, not an answer chunk. TTFT stays the first chunk of
  any kind (what the engine made the user wait for); TTFAT, time to first answer token, is
  send -> first answer chunk (None when the answer never began). ITL and TPOT stay over every
  output token, thinking included (the engine decodes both alike).
- Reasoning tokens: `usage.completion_tokens_details.reasoning_tokens` when the engine reports
  it (source "usage"), else the tokens the thinking chunks carried (source "stream"); answer
  tokens are the output tokens less the reasoning tokens.
- Reasoning rate: reasoning tokens / (TTFAT - TTFT): the thinking tokens after the first,
  and the first answer token, each took one step of that span. Answer rate: (answer tokens
  - 1) / (E2E - TTFAT), 1 / TPOT of the answer alone.
- TTFT includes reasoning when a thinking chunk came before the first answer chunk (or there
  was no answer): such a TTFT is not comparable with that of a model that answers at once.
- Percentiles: linear interpolation between order statistics (numpy's default `linear`
  method, the one vLLM's benchmark uses).
- Where the time went (`time_split`): the engine's own queue, prefill and decode times (read
  by each adapter from its engine's report) beside the client's TTFT and E2E; the rest of
  each is the time outside the engine's clock (network, HTTP, the server's front end, the
  client): TTFT rest = TTFT - queue - prefill, E2E rest = E2E - queue - prefill - decode,
  clamped at 0 (a note says by how much the engine's clock counted more than the client saw).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, overload

import numpy as np

from services.core import units

# The readers of one reported count live beside the rule that holds the counts; cached_tokens
# is re-exported for this module's readers (the adapters, the Playground).
from services.core.counts import (
    Refusal,
    cached_tokens,  # noqa: F401 - re-exported
    held_counts,
    token_count,
)
from services.core.json_types import JsonOut

DEFAULT_PERCENTILES: tuple[float, ...] = (50, 90, 95, 99)


class ChoiceTrace(Protocol):
    """One choice's arrival record (services.client.ChoiceStream is one)."""

    @property
    def times(self) -> Sequence[float]: ...

    @property
    def chars(self) -> Sequence[int]: ...

    @property
    def reasoning(self) -> Sequence[int]: ...


@dataclass(frozen=True, slots=True)
class RequestMetrics:
    """One request's figures. Times in seconds from the send."""

    ttft_s: float | None
    e2e_s: float | None
    tpot_s: float | None
    itl_s: list[float]
    #: Arrival of each content chunk of choice 0, and the tokens each carried.
    chunk_times_s: list[float]
    chunk_tokens: list[int]
    #: The usage's completion tokens when reported and credible, else the stream's own count
    #: (services/core/counts.py; the content chunks of all choices when no text was recorded).
    output_tokens: int
    #: The usage's counts when credible; None when not reported or refused (`refused`).
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    #: Send -> first answer chunk (not thinking); equal to TTFT for a model that does not think.
    ttfat_s: float | None = None
    reasoning_tokens: int = 0
    #: "usage" (completion_tokens_details.reasoning_tokens) or "stream" (the thinking chunks).
    reasoning_tokens_source: str = "stream"
    answer_tokens: int = 0
    ttft_includes_reasoning: bool = False
    #: The tokens the stream itself proves (None: its text was not recorded).
    stream_tokens: int | None = None
    #: The usage counters refused, each with what refuted it: never published.
    refused: tuple[Refusal, ...] = ()
    #: The stream itself carried more tokens than the max_tokens asked.
    over_max_tokens: bool = False

    @property
    def reasoning_tok_s(self) -> float | None:
        return reasoning_rate(self.ttft_s, self.ttfat_s, self.reasoning_tokens)

    @property
    def answer_tok_s(self) -> float | None:
        return answer_rate(self.ttfat_s, self.e2e_s, self.answer_tokens)

    @property
    def itl_mean_s(self) -> float | None:
        return math.fsum(self.itl_s) / len(self.itl_s) if self.itl_s else None

    @property
    def itl_p90_s(self) -> float | None:
        return percentile(self.itl_s, 90) if self.itl_s else None


def measure_stream(
    start: float,
    choices: Sequence[ChoiceTrace],
    usage: Mapping[str, Any] | None,
    timings: Mapping[str, Any] | None = None,
    *,
    texts: Sequence[Sequence[str]] | None = None,
    max_tokens: int | None = None,
) -> RequestMetrics:
    """The figures of one stream: `start` is the perf_counter at send, `choices` the arrival
    records in choice order (choice 0 first), `usage` and `timings` as the engine sent them,
    `texts` each choice's chunk texts (to hold the usage against) and `max_tokens` as asked."""
    firsts = [c.times[0] for c in choices if c.times]
    lasts = [c.times[-1] for c in choices if c.times]
    ttft = min(firsts) - start if firsts else None
    e2e = max(lasts) - start if lasts else None
    held = held_counts(usage, timings, sum(len(c.times) for c in choices), texts, max_tokens)
    completion = held.completion_tokens
    total = held.output_tokens
    first_choice = choices[0] if choices else None
    times = list(first_choice.times) if first_choice else []
    chars = list(first_choice.chars) if first_choice else []
    # Without a credible usage count, the stream's own count is shared out the same way (one
    # per chunk unless its text proves more).
    counted = completion if completion is not None else (total if texts else None)
    choice_tokens = counted // len(choices) if counted is not None and len(choices) > 1 else counted
    counts = chunk_token_counts(chars, choice_tokens)
    itl = token_gaps(times, counts)
    tpot_s = tpot(times[0] - start, times[-1] - start, sum(counts)) if times else None
    thinking = reasoning_of(start, choices, counts, choice_tokens, held.reasoning_tokens, total)
    return RequestMetrics(
        ttft_s=ttft,
        e2e_s=e2e,
        tpot_s=tpot_s,
        itl_s=itl,
        chunk_times_s=[t - start for t in times],
        chunk_tokens=counts,
        output_tokens=total,
        prompt_tokens=held.prompt_tokens,
        completion_tokens=completion,
        cached_tokens=held.cached_tokens,
        ttfat_s=thinking.ttfat_s,
        reasoning_tokens=thinking.tokens,
        reasoning_tokens_source=thinking.source,
        answer_tokens=max(0, total - thinking.tokens),
        ttft_includes_reasoning=thinking.first,
        stream_tokens=held.stream_tokens,
        refused=held.refused,
        over_max_tokens=held.over_max_tokens,
    )


@dataclass(frozen=True, slots=True)
class Reasoning:
    """A stream's thinking, as the module's definitions say."""

    ttfat_s: float | None
    tokens: int
    source: str
    #: A thinking chunk came before the first answer chunk (or there was no answer).
    first: bool


def reasoning_of(
    start: float,
    choices: Sequence[ChoiceTrace],
    first_counts: Sequence[int],
    choice_tokens: int | None,
    reported: int | None,
    total_tokens: int,
) -> Reasoning:
    """TTFAT, reasoning tokens and whether thinking came first. `first_counts` are choice 0's
    chunk token counts (worked out for its ITL already); another choice's are shared out the
    same way from `choice_tokens`. `reported`: the usage's reasoning tokens, held (None: not
    reported or refused)."""
    answer_firsts: list[float] = []
    streamed = 0
    first = False
    for number, choice in enumerate(choices):
        marks = choice.reasoning
        times = choice.times
        if not marks:
            if times:
                answer_firsts.append(times[0])
            continue
        marked = set(marks)
        answer_at = next((i for i in range(len(times)) if i not in marked), None)
        if answer_at is not None:
            answer_firsts.append(times[answer_at])
        first = first or answer_at is None or answer_at > 0
        counts = first_counts if number == 0 else chunk_token_counts(choice.chars, choice_tokens)
        streamed += sum(counts[i] for i in marked if i < len(counts))
    return Reasoning(
        ttfat_s=min(answer_firsts) - start if answer_firsts else None,
        tokens=min(reported, total_tokens) if reported is not None else streamed,
        source="usage" if reported is not None else "stream",
        first=first,
    )


def thinking_reported(ttft_s: float | None, ttfat_s: float | None, reasoning_tokens: int | None) -> bool:
    """Whether another tool's figures say a TTFT includes thinking (its file has no chunks to
    look at): it counted reasoning tokens, or its first answer token came after its first token."""
    if reasoning_tokens:
        return True
    return ttft_s is not None and ttfat_s is not None and ttfat_s > ttft_s


def reasoning_rate(
    ttft_s: float | None, ttfat_s: float | None, reasoning_tokens: int | None
) -> float | None:
    """Thinking tokens per second, reasoning tokens / (TTFAT - TTFT); None without thinking or
    without an answer after it."""
    if ttft_s is None or ttfat_s is None or not reasoning_tokens or ttfat_s <= ttft_s:
        return None
    return reasoning_tokens / (ttfat_s - ttft_s)


def answer_rate(ttfat_s: float | None, e2e_s: float | None, answer_tokens: int | None) -> float | None:
    """Answer tokens per second after the first, (answer tokens - 1) / (E2E - TTFAT)."""
    if ttfat_s is None or e2e_s is None or not answer_tokens or answer_tokens < 2:
        return None
    if e2e_s <= ttfat_s:
        return None
    return (answer_tokens - 1) / (e2e_s - ttfat_s)


def chunk_token_counts(chunk_chars: Sequence[int], total_tokens: int | None) -> list[int]:
    """How many tokens each content chunk carried, given the usage total: one per chunk when
    the counts agree (or there is no total). Otherwise the whole total is shared in
    proportion to each chunk's text length (largest remainders), every chunk keeping at
    least one token while there are enough: a first chunk of three words among one-word
    chunks gets three. With fewer tokens than chunks (a whitespace-only or stop piece) the
    first `total_tokens` chunks carry one each."""
    chunks = len(chunk_chars)
    if chunks == 0:
        return []
    if total_tokens is None or total_tokens == chunks:
        return [1] * chunks
    if total_tokens < chunks:
        return [1 if i < total_tokens else 0 for i in range(chunks)]
    weights = [max(1, c) for c in chunk_chars]
    scale = total_tokens / sum(weights)
    ideal = [w * scale for w in weights]
    counts = [max(1, math.floor(x)) for x in ideal]
    missing = total_tokens - sum(counts)
    if missing > 0:
        for i in sorted(range(chunks), key=lambda i: (counts[i] - ideal[i], i))[:missing]:
            counts[i] += 1
    # The minimum of one token lifted short chunks: take the surplus back from the chunks
    # most over their share.
    over = [(ideal[i] - counts[i], i) for i in range(chunks) if counts[i] > 1]
    heapq.heapify(over)
    while missing < 0 and over:
        _, i = heapq.heappop(over)
        counts[i] -= 1
        missing += 1
        if counts[i] > 1:
            heapq.heappush(over, (ideal[i] - counts[i], i))
    return counts


def token_gaps(chunk_times: Sequence[float], chunk_tokens: Sequence[int]) -> list[float]:
    """Per-token gaps (ITL) from chunk arrival times and the tokens each chunk carried; see
    the module's definitions."""
    gaps: list[float] = []
    if not chunk_times:
        return gaps
    first_tokens = chunk_tokens[0] if chunk_tokens else 1
    gaps.extend([0.0] * max(0, first_tokens - 1))
    previous = chunk_times[0]
    pending = 0.0
    for time, tokens in zip(chunk_times[1:], chunk_tokens[1:]):
        gap = time - previous + pending
        previous = time
        if tokens <= 0:
            pending = gap
            continue
        pending = 0.0
        gaps.extend([gap / tokens] * tokens)
    return gaps


def tpot(ttft_s: float | None, e2e_s: float | None, output_tokens: int | None) -> float | None:
    """(E2E - TTFT) / (output tokens - 1); None for one-token answers. Never negative (a
    foreign file may hold an E2E below its TTFT)."""
    if ttft_s is None or e2e_s is None or not output_tokens or output_tokens < 2:
        return None
    return max(0.0, (e2e_s - ttft_s) / (output_tokens - 1))


# ---------------------------------------------------------------------------------------
# Where the time went: the engine's own per-request times beside the client's
# ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class EngineTimes:
    """What an engine said about one request's time, in seconds (each adapter reads its own
    engine's report: `EngineAdapter.engine_times`); None: not reported.

    queue: arrival in the scheduler -> scheduled; prefill: scheduled -> first token;
    decode: first token -> last token. `inference_s` is prefill + decode for an engine that
    reports only their sum (TGI's x-inference-time)."""

    queue_s: float | None = None
    prefill_s: float | None = None
    decode_s: float | None = None
    inference_s: float | None = None
    #: The whole prompt as the engine counted it, and the part it took from its cache.
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    #: Where the figures came from, in words ("final chunk's metrics", "timings", "headers").
    source: str = ""
    #: What passed them on when they are another server's ("router": its worker's times, the
    #: router's own time then in the rest); "" for the engine's own.
    via: str = ""

    @property
    def reports_time(self) -> bool:
        return (
            self.prefill_s is not None
            or self.decode_s is not None
            or self.inference_s is not None
            or self.queue_s is not None
        )

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Pickled as its fields (a pooled load sends each record back once): a slotted
        # dataclass's own state lookup costs more (benchmarks/engine_times_cost.py).
        return EngineTimes, (
            self.queue_s,
            self.prefill_s,
            self.decode_s,
            self.inference_s,
            self.prompt_tokens,
            self.cached_tokens,
            self.source,
            self.via,
        )

    def to_json(self) -> JsonOut:
        """The reported fields only (stored with each request; an import reads them back)."""
        return {
            key: value
            for key in ENGINE_TIMES_FIELDS
            if (value := getattr(self, key)) is not None and value != ""
        }

    @classmethod
    def from_json(cls, data: Any) -> EngineTimes | None:
        """Stored fields back (lenient: a field of another type reads as not reported)."""
        if not isinstance(data, Mapping):
            return None

        def seconds(key: str) -> float | None:
            return units.number(data.get(key))

        source = data.get("source")
        return cls(
            queue_s=seconds("queue_s"),
            prefill_s=seconds("prefill_s"),
            decode_s=seconds("decode_s"),
            inference_s=seconds("inference_s"),
            prompt_tokens=token_count(data.get("prompt_tokens")),
            cached_tokens=token_count(data.get("cached_tokens")),
            source=source if isinstance(source, str) else "",
            via=via if isinstance(via := data.get("via"), str) else "",
        )


ENGINE_TIMES_FIELDS = (
    "queue_s",
    "prefill_s",
    "decode_s",
    "inference_s",
    "prompt_tokens",
    "cached_tokens",
    "source",
    "via",
)


#: Why a rest can come out below 0, said wherever one is clamped.
CLAMP_WHY = (
    "the engine's clock resolution or rounding (its last step can end after the last text went out)"
)


@dataclass(slots=True)
class TimeSplit:
    """One request's time, split: the engine's queue, prefill and decode (as it saw them), and
    the rest of TTFT and of E2E, spent outside the engine's own clock (network, HTTP, the
    server's front end, the client). queue + prefill + ttft_rest = TTFT and
    queue + prefill + decode + e2e_rest = E2E, by definition (a queue the engine does not
    report counts 0 and stays in the rest), except where the engine counted more time than the
    client saw: a rest is never below 0, it is clamped there and `overcount_s` keeps how much
    more the engine counted (its clock's resolution or rounding, `CLAMP_WHY`)."""

    queue_s: float | None
    prefill_s: float | None
    decode_s: float | None
    #: Everything the engine accounts for: queue + prefill + decode (or + inference).
    engine_s: float | None
    ttft_rest_s: float | None
    e2e_rest_s: float | None
    #: How much more time than the client saw the engine counted (s): 0 when the split adds up.
    overcount_s: float = 0.0
    #: "router" when the times are a router's worker's (`EngineTimes.via`): the parts are the
    #: worker's, the router's own time is in the rest.
    via: str = ""

    @property
    def clamp_note(self) -> str:
        """Why a rest reads 0, in words ("" when none was clamped)."""
        return clamp_note(self.overcount_s) if self.overcount_s > 0 else ""


def clamp_note(overcount_s: float, requests: int | None = None) -> str:
    """A clamped rest's note: by how much the engine's times exceeded the client's, and why."""
    where = f" in {requests} request(s)" if requests else ""
    return (
        f"rest clamped at 0{where}: the engine counted up to {units.duration(overcount_s)} more than "
        f"the client saw ({CLAMP_WHY})"
    )


def time_split(
    ttft_s: float | None, e2e_s: float | None, engine: EngineTimes | None
) -> TimeSplit | None:
    """The split of one request's client TTFT and E2E by its engine's own times; None when
    the engine reported no time (the caller says "not reported by <engine>"). A rest below 0
    is clamped at 0 with the overcount kept."""
    if engine is None or not engine.reports_time:
        return None
    queue = engine.queue_s or 0.0
    working = (
        engine.prefill_s + engine.decode_s
        if engine.prefill_s is not None and engine.decode_s is not None
        else engine.inference_s
    )
    engine_s = queue + working if working is not None else None
    ttft_rest = (
        ttft_s - queue - engine.prefill_s
        if ttft_s is not None and engine.prefill_s is not None
        else None
    )
    e2e_rest = e2e_s - engine_s if e2e_s is not None and engine_s is not None else None
    overcount = max(0.0, -min(ttft_rest or 0.0, e2e_rest or 0.0))
    return TimeSplit(
        queue_s=engine.queue_s,
        prefill_s=engine.prefill_s,
        decode_s=engine.decode_s,
        engine_s=engine_s,
        ttft_rest_s=None if ttft_rest is None else max(0.0, ttft_rest),
        e2e_rest_s=None if e2e_rest is None else max(0.0, e2e_rest),
        overcount_s=overcount,
        via=engine.via,
    )


def milliseconds(value: Any) -> float | None:
    """An engine's millisecond figure in seconds; None for anything but a finite number."""
    found = units.number(value)
    return None if found is None else found / 1000


# ---------------------------------------------------------------------------------------
# Distributions
# ---------------------------------------------------------------------------------------


@overload
def percentile(values: Sequence[float] | np.ndarray, q: float, *, axis: None = None) -> float: ...


@overload
def percentile(values: np.ndarray, q: float | Sequence[float], *, axis: int) -> np.ndarray: ...


def percentile(values: Any, q: Any, *, axis: int | None = None) -> Any:
    """The q-th percentile (q in 0..100) by linear interpolation between order statistics;
    along `axis` of an array (bootstrap resamples) when one is given. Empty -> ValueError."""
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        raise ValueError("no values")
    if axis is None:
        return float(np.percentile(array, q))
    return np.percentile(array, q, axis=axis)


def percentile_key(q: float) -> str:
    return f"p{q:g}"


def describe(
    values: Iterable[float], percentiles: Sequence[float] = DEFAULT_PERCENTILES
) -> dict[str, float | None]:
    """mean, the percentiles (always p50, p90, p95 and p99, and those asked), min, max and
    std of `values`, all None when there are none."""
    wanted = sorted(set(DEFAULT_PERCENTILES) | {float(q) for q in percentiles})
    keys = ["mean", *(percentile_key(q) for q in wanted), "min", "max", "std"]
    array = np.asarray(
        values if isinstance(values, (list, tuple, np.ndarray)) else list(values), dtype=np.float64
    )
    if array.size == 0:
        return dict.fromkeys(keys)
    mean = math.fsum(array.tolist()) / array.size
    deviations = array - mean
    std = math.sqrt(math.fsum((deviations * deviations).tolist()) / array.size)
    result: dict[str, float | None] = {"mean": mean}
    for q, value in zip(wanted, np.percentile(array, wanted).tolist()):
        result[percentile_key(q)] = float(value)
    result.update({"min": float(array.min()), "max": float(array.max()), "std": std})
    return result
