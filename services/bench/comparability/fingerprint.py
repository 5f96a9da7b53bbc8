"""What makes one engine's figures of a run comparable with another's, as one typed record.

A field left None is *unknown*: the run did not record it (an old run, an import whose file does
not say). Unknown is never read as "the same": the comparison lists it as not checked.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from services.core import stored_json
from services.core.json_types import JsonOut

#: What the prompt cache held when the measured requests were served: no reuse, a cache already
#: holding these prompts (a repeat of the same seed, vllm #52884), or a workload built to share.
PrefixCache = Literal["cold", "warm", "shared prefixes"]
#: Who counted the tokens the rates divide by.
TokenCounter = Literal["engine usage", "tokenizer", "text chunks"]

#: A prompt whose share of tokens served from the cache reaches this ran on a warm cache: the
#: synthetic prompts share their first words (the chat template, the instruction), a block or two.
WARM_CACHE_SHARE = 0.5
#: Engine settings kept in a fingerprint at most (the Engine settings table shows them all).
MAX_SETTINGS = 80


@dataclass(frozen=True)
class Comparability:
    """One engine of one run: how its figures were produced. None = not recorded."""

    #: Which tool measured (Shootout, or the imported tool's label).
    source: str | None = None
    model: str | None = None
    #: Mean prompt tokens per request asked for (before the chat template), and as served
    #: (the engine's prompt_tokens, template included).
    input_len_asked: float | None = None
    input_len_served: float | None = None
    output_len_asked: float | None = None
    output_len_served: float | None = None
    #: Whether every answer was asked to run to output_len (ignore_eos / min_tokens).
    fixed_output: bool | None = None
    #: Whether the engine did: no answer shorter than asked.
    fixed_output_honoured: bool | None = None
    warmup_requests: int | None = None
    #: "closed" (a concurrency), "open" (a rate) or "trace replay".
    loop: str | None = None
    #: The load level the figures come from ("concurrency 8", "rate 2 req/s").
    level: str | None = None
    prefix_cache: PrefixCache | None = None
    #: Share of prompt tokens served from the cache (usage cached_tokens), when reported.
    cached_share: float | None = None
    #: Whether the cache held the workload before the run (its first request found it cached):
    #: False on both sides makes a cache difference the engines' own, to explain, not refuse.
    cache_warm_at_start: bool | None = None
    sampling: str | None = None
    token_counter: TokenCounter | None = None
    #: How the client timed: the tool, streaming, and whether TTFT includes connecting.
    timing: str | None = None
    #: Whether TTFT is the first thinking token of a reasoning model (stored by the benchmark
    #: as `ttft_includes_reasoning`; runs from before it was recorded: unknown).
    ttft_includes_reasoning: bool | None = None
    hardware: str | None = None
    engine_kind: str | None = None
    engine_version: str | None = None
    #: What the engine reported of its settings, flattened ("cache_config.block_size": "16").
    engine_settings: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> JsonOut:
        """The stored form: known fields only (a missing key reads back as unknown)."""
        out = {
            key: value
            for key, value in dataclasses.asdict(self).items()
            if value is not None and value != {}
        }
        return out

    @classmethod
    def from_json(cls, data: Any) -> Comparability:
        """Leniently: a field of the wrong type reads as unknown, never an exception."""
        data = stored_json.mapping(data)

        def text(key: str) -> str | None:
            return stored_json.nonempty_text(data.get(key))

        def flag(key: str) -> bool | None:
            return stored_json.optional_flag(data.get(key))

        def number(key: str) -> float | None:
            return stored_json.number(data.get(key))

        warmup = number("warmup_requests")
        prefix = data.get("prefix_cache")
        counter = data.get("token_counter")
        share = number("cached_share")
        # More cached tokens than prompt tokens (a run stored before such counters were
        # refused): neither the share nor the cache's state it was read from is known.
        impossible = share is not None and not 0 <= share <= 1
        return cls(
            source=text("source"),
            model=text("model"),
            input_len_asked=number("input_len_asked"),
            input_len_served=number("input_len_served"),
            output_len_asked=number("output_len_asked"),
            output_len_served=number("output_len_served"),
            fixed_output=flag("fixed_output"),
            fixed_output_honoured=flag("fixed_output_honoured"),
            warmup_requests=int(warmup) if warmup is not None else None,
            loop=text("loop"),
            level=text("level"),
            prefix_cache=prefix if prefix in _PREFIX_CACHES and not impossible else None,
            cached_share=None if impossible else share,
            cache_warm_at_start=flag("cache_warm_at_start"),
            sampling=text("sampling"),
            token_counter=counter if counter in _TOKEN_COUNTERS else None,
            timing=text("timing"),
            ttft_includes_reasoning=flag("ttft_includes_reasoning"),
            hardware=text("hardware"),
            engine_kind=text("engine_kind"),
            engine_version=text("engine_version"),
            engine_settings={
                str(k): str(v)
                for k, v in stored_json.mapping(data.get("engine_settings")).items()
                if v is not None
            },
        )

    @property
    def cautions(self) -> list[str]:
        """What makes this run's own figures read as more than they are, whatever they are set
        against (a plan's bound, a threshold): plain text, one line each."""
        out = []
        if self.fixed_output_honoured is False:
            out.append(
                "fixed output length not honoured: answers ended early, so decode is under-counted"
            )
        if self.prefix_cache == "warm":
            share = f" ({self.cached_share:.0%} of prompt tokens)" if self.cached_share else ""
            out.append(f"warm prefix cache{share}: prefill was mostly skipped")
        if self.token_counter == "text chunks":
            out.append("tokens counted from the stream's text chunks, not the engine's usage")
        if self.ttft_includes_reasoning:
            out.append("TTFT is the first thinking token of a reasoning model")
        return out

    def merged_over(self, other: Comparability) -> Comparability:
        """This record with its unknown fields taken from `other`."""
        values = {}
        for item in dataclasses.fields(self):
            mine = getattr(self, item.name)
            values[item.name] = mine if mine not in (None, {}) else getattr(other, item.name)
        return Comparability(**values)


_PREFIX_CACHES: tuple[PrefixCache, ...] = typing.get_args(PrefixCache)
_TOKEN_COUNTERS: tuple[TokenCounter, ...] = typing.get_args(TokenCounter)


#: Two cached shares this close (absolute, 0.10 = 10 percentage points) are the same.
CACHED_SHARE_POINTS = 0.10
#: Blocking fields that, recorded on one side only, could hide a difference that changes every
#: figure (answers of another length, tokens counted another way): unknown on one side blocks.
UNKNOWN_BLOCKS = frozenset({"output_len_served", "token_counter"})


@dataclass(frozen=True)
class Rule:
    """How one field is compared: equal, or within a relative tolerance; `blocking` fields make
    two runs not comparable, the others (the engine itself: what a comparison measures) are
    shown as what changed."""

    name: str
    label: str
    blocking: bool = True
    #: For numbers: the largest relative difference still called the same.
    tolerance: float = 0.0
    unit: str = ""


RULES: tuple[Rule, ...] = (
    Rule("source", "Measured by"),
    # The model's name is the engine's to choose (a GGUF file, an HF id, a served alias, a
    # quantisation): comparing builds of a model is what a comparison is for, so it is shown
    # as what changed, like the engine, not refused.
    Rule("model", "Model", blocking=False),
    Rule("input_len_asked", "Input length asked", unit="tokens"),
    Rule("input_len_served", "Input length as served", tolerance=0.10, unit="tokens"),
    Rule("output_len_asked", "Output length asked", unit="tokens"),
    Rule("output_len_served", "Output length as served", tolerance=0.05, unit="tokens"),
    Rule("fixed_output", "Fixed output length asked (ignore_eos)"),
    Rule("fixed_output_honoured", "Fixed output length honoured"),
    Rule("warmup_requests", "Warm-up"),
    Rule("loop", "Loop"),
    Rule("level", "Load level"),
    Rule("prefix_cache", "Prefix cache"),
    # The share itself: 49% of prompt tokens from the cache reads "cold" (under half), yet
    # prefill was half skipped. Within CACHED_SHARE_POINTS of each other is the same.
    Rule("cached_share", "Cached prompt share"),
    Rule("sampling", "Sampling"),
    Rule("token_counter", "Tokens counted by"),
    Rule("timing", "Client timing"),
    Rule("ttft_includes_reasoning", "TTFT includes reasoning"),
    Rule("hardware", "Hardware"),
    Rule("engine_kind", "Engine", blocking=False),
    Rule("engine_version", "Engine version", blocking=False),
    Rule("engine_settings", "Engine settings", blocking=False),
)


def value_text(rule: Rule, value: Any) -> str:
    """A field's value as a person reads it."""
    if value is None or value == {}:
        return "not recorded"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if rule.name == "warmup_requests":
        return "none (cold start in the figures)" if value == 0 else f"{value} request(s)"
    if rule.name == "cached_share" or (rule.name == "prefix_cache" and isinstance(value, float)):
        return f"{value:.0%}"
    if isinstance(value, float):
        text = f"{value:,.1f}".removesuffix(".0")
        return f"{text} {rule.unit}".strip()
    if isinstance(value, dict):
        return f"{len(value)} setting(s)"
    return str(value)
