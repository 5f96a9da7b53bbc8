"""An engine's token counters held against its own stream (issue 55): a usage block is the
engine's word, the streamed text is what it did. Every figure reads its counts from
`held_counts`, so a counter the stream refutes, or one no answer can have, is refused once and
never published: the figures use the stream's count, and the refusal names the field and both
counts (services/bench/findings.py turns a run's refusals into its findings).

What the stream proves (docs/measuring.md, "Token counts held against the stream"):

- Every content chunk carried at least one token (engines send one chunk per decoding step at
  most), and every whitespace-separated word at least one (no tokenizer in use merges words
  across whitespace), so the answer has at least max(chunks, words) tokens.
- Fine chunking, one token per chunk, is what vLLM, llama.cpp, SGLang and TGI send by default:
  no chunk then holds two words. There an ASCII chunk is exactly one token, and a chunk with
  other characters at most one per byte (a byte-level tokenizer's pieces of one character
  come out together), so usage may exceed the chunks only by the tokens no text shows.
- Coarse chunking (a chunk of several words: speculative decoding, a stream interval, a stop
  string's held-back text) leaves only the text's own bounds: at least its words, at most one
  token per byte.
- Tokens no text shows: the end-of-sequence token, a stop string cut from the text, a reasoning
  parser's tags, a skipped special token (`TEXTLESS_TOKENS`), plus `SHARE` of the count.

Impossible counters are refused whatever the stream: a negative count, cached prompt tokens
above the prompt, completion tokens above the max_tokens asked (when the stream shows fewer).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.core.json_types import JsonOut

#: Tokens an answer may hold beyond what its text shows (see the module's docstring).
TEXTLESS_TOKENS = 4
#: The share of a count allowed either way on top, for an engine's own rounding of its books.
SHARE = 0.05

#: Why a counter was refused (`Refusal.rule`), in words: "{field} {reported} {words}".
RULES = {
    "negative": "is below 0",
    "above_stream": "is more than the stream carried",
    "below_stream": "is less than the stream carried",
    "above_max_tokens": "is more than the max_tokens asked",
    "above_prompt": "is more than the prompt's tokens",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """One counter of an engine's usage refused for one request: never published."""

    #: The usage field: "completion_tokens", "prompt_tokens", "cached_tokens", "reasoning_tokens".
    field: str
    #: What the engine reported.
    reported: int
    #: What it was held against: the stream's count, the prompt's tokens, the max_tokens asked
    #: (None for a negative count, which needs nothing to refute it).
    against: int | None
    #: A key of `RULES`.
    rule: str

    def to_json(self) -> JsonOut:
        return {
            "field": self.field,
            "reported": self.reported,
            "against": self.against,
            "rule": self.rule,
        }

    @classmethod
    def from_json(cls, data: Any) -> Refusal | None:
        """A stored refusal back (None for anything that is not one)."""
        if not isinstance(data, Mapping):
            return None
        field, rule = data.get("field"), data.get("rule")
        reported, against = _whole(data.get("reported")), _whole(data.get("against"))
        if not isinstance(field, str) or rule not in RULES or reported is None:
            return None
        return cls(field, reported, against, rule)


@dataclass(frozen=True, slots=True)
class StreamCount:
    """What one answer's stream shows of its length (every choice together)."""

    chunks: int
    #: The tokens the stream proves: the figure used when the usage is refused.
    tokens: int
    #: The most tokens this stream can have carried (see the module's docstring).
    most: int
    #: A chunk held several words: the chunks are not one token each.
    coarse: bool

    @classmethod
    def of(cls, texts: Sequence[Sequence[str]]) -> StreamCount:
        """The count of the chunk texts of each choice: a few passes of C string methods over
        the chunks (no regex, no Python loop per chunk for ASCII text): about 0.1 µs a chunk."""
        chunks = words = size = fine_most = 0
        coarse = False
        for parts in texts:
            text = "".join(parts)
            chunks += len(parts)
            words += len(text.split())
            # A chunk of two words or more: more words in the chunks, each counted alone (a space
            # between them), than chunks with a word.
            worded = len(parts) - sum(map(str.isspace, parts))
            coarse = coarse or len(" ".join(parts).split()) > worded
            if text.isascii():
                size += len(text)
                fine_most += len(parts)
            else:
                size += len(text.encode("utf-8", "replace"))
                fine_most += sum(
                    1 if part.isascii() else len(part.encode("utf-8", "replace")) for part in parts
                )
        least = max(chunks, words)
        most = size if coarse else fine_most
        return cls(chunks, least, max(least, most) + TEXTLESS_TOKENS, coarse)


@dataclass(frozen=True, slots=True)
class HeldCounts:
    """One request's token counts after holding the usage against the stream: what the
    figures may use. None: not reported, or refused (`refused` says which and why)."""

    completion_tokens: int | None
    prompt_tokens: int | None
    cached_tokens: int | None
    reasoning_tokens: int | None
    #: The credible completion tokens, else the stream's own count (content chunks when the
    #: text was not recorded).
    output_tokens: int
    #: The stream's own count (None when the text was not recorded).
    stream_tokens: int | None
    #: The stream itself carried more tokens than the max_tokens asked (the engine ignored
    #: it: a broken workload, not a lying counter).
    over_max_tokens: bool
    refused: tuple[Refusal, ...] = ()


def held_counts(
    usage: Mapping[str, Any] | None,
    timings: Mapping[str, Any] | None,
    chunks: int,
    texts: Sequence[Sequence[str]] | None = None,
    max_tokens: int | None = None,
) -> HeldCounts:
    """The counts of one answer: `usage` and `timings` as the engine sent them, `chunks` the
    content chunks of every choice, `texts` each choice's chunk texts when recorded (the stream
    check needs them; without, only impossible counters are refused), `max_tokens` per choice
    as asked."""
    choices = max(1, len(texts)) if texts else 1
    stream = StreamCount.of(texts) if texts else None
    refused: list[Refusal] = []
    prompt = _count(usage, "prompt_tokens", refused)
    cached = cached_tokens(usage, timings)
    if cached is not None and cached < 0:
        refused.append(Refusal("cached_tokens", cached, None, "negative"))
        cached = None
    elif cached is not None and prompt is not None and cached > prompt:
        refused.append(Refusal("cached_tokens", cached, prompt, "above_prompt"))
        cached = None
    completion = _count(usage, "completion_tokens", refused)
    asked = max_tokens * choices if max_tokens is not None and max_tokens > 0 else None
    seen = stream.tokens if stream is not None else chunks
    over_max = asked is not None and seen > asked + tolerance(asked)
    if completion is not None and stream is not None:
        if completion > stream.most + tolerance(stream.most):
            refused.append(Refusal("completion_tokens", completion, stream.tokens, "above_stream"))
            completion = None
        elif completion < stream.tokens - tolerance(stream.tokens):
            refused.append(Refusal("completion_tokens", completion, stream.tokens, "below_stream"))
            completion = None
    if (
        completion is not None
        and asked is not None
        and not over_max
        and completion > asked + tolerance(asked)
    ):
        refused.append(Refusal("completion_tokens", completion, asked, "above_max_tokens"))
        completion = None
    output = completion if completion is not None else seen
    reasoning = _reasoning_count(usage, refused)
    return HeldCounts(
        completion_tokens=completion,
        prompt_tokens=prompt,
        cached_tokens=cached,
        reasoning_tokens=min(reasoning, output) if reasoning is not None else None,
        output_tokens=output,
        stream_tokens=stream.tokens if stream is not None else None,
        over_max_tokens=over_max,
        refused=tuple(refused),
    )


def tolerance(count: int) -> int:
    """How far a count may be off before it is a disagreement: at least 1 token, else `SHARE`."""
    return max(1, math.ceil(abs(count) * SHARE))


def token_count(value: Any) -> int | None:
    """A token count as an engine reported it: a whole number, else None (an engine may send
    null, a float or a string; none of them may become a figure or a traceback). A negative
    whole number is returned as sent: `held_counts` refuses it by name."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return int(value) if float(value).is_integer() else None


def cached_tokens(
    usage: Mapping[str, Any] | None, timings: Mapping[str, Any] | None = None
) -> int | None:
    """Cached prompt tokens as reported: `usage.prompt_tokens_details.cached_tokens`, else
    llama.cpp's `timings.cache_n` (`timings` given, or stored inside the usage as the
    Playground keeps it). Not yet held against the prompt: `held_counts` does that."""
    usage = usage or {}
    details = usage.get("prompt_tokens_details")
    if (
        isinstance(details, Mapping)
        and (cached := token_count(details.get("cached_tokens"))) is not None
    ):
        return cached
    if timings is None and isinstance(usage.get("timings"), Mapping):
        timings = usage["timings"]
    return token_count(timings.get("cache_n")) if timings else None


def _count(usage: Mapping[str, Any] | None, key: str, refused: list[Refusal]) -> int | None:
    value = token_count(usage.get(key)) if usage else None
    if value is not None and value < 0:
        refused.append(Refusal(key, value, None, "negative"))
        return None
    return value


def _reasoning_count(usage: Mapping[str, Any] | None, refused: list[Refusal]) -> int | None:
    details = usage.get("completion_tokens_details") if usage else None
    value = token_count(details.get("reasoning_tokens")) if isinstance(details, Mapping) else None
    if value is not None and value < 0:
        refused.append(Refusal("reasoning_tokens", value, None, "negative"))
        return None
    return value


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
