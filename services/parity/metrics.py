"""Answer parity: how far one engine's greedy answers are from a reference engine's.

Inputs are what the engines answered (text, usage, and the per-token `logprobs.content`
records where the engine returns them). Definitions, per prompt:

- exact match: the two answer texts are equal, character for character.
- first divergence: the position (0-based) of the first token where the two answers differ;
  None when they are the same throughout. An answer that is a strict prefix of the other
  diverges where it ends. Tokens are the engines' own (`logprobs.content[].token`); when
  either engine reported none, the answers are compared by whitespace-separated words and
  the unit says "word".
- token agreement: the share of the common span (positions both answers have) where the
  tokens are equal; 1.0 for two empty answers, 0.0 when only one is empty.
- log-probability difference: the mean |logprob_ref - logprob_other| of the chosen tokens
  over the shared prefix (before the first divergence): there both engines saw the same
  context and picked the same token, so the difference is the numerics alone.
- top-k agreement: over the shared prefix and the divergence position (the context is still
  the same there), the share of positions where the reference's token is among the other
  engine's `top_logprobs`. At the divergence, `divergence_margin` is how much more likely the
  other engine found its own token than the reference's (None when the reference's token is
  not in its top-k): a small margin is a near-tie, a quantisation's rounding; a large one a
  different model, template or tokenizer.

Per engine, the summary pools prompts: exact-match rate, the divergence positions'
distribution (median through THE percentile function of services/core/measure.py), mean token
agreement, mean log-probability difference and the pooled top-k rate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from services.core import units
from services.core.json_types import JsonOut
from services.core.measure import percentile, token_count

Unit = Literal["token", "word"]


@dataclass(frozen=True, slots=True)
class TokenChoice:
    """One generated token: its text, its log-probability, and the engine's top alternatives."""

    token: str
    logprob: float | None = None
    top: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Answer:
    """One engine's answer to one prompt. `tokens` None: the engine reported no per-token record."""

    text: str
    tokens: tuple[TokenChoice, ...] | None = None
    completion_tokens: int | None = None

    @property
    def has_logprobs(self) -> bool:
        return self.tokens is not None and any(t.logprob is not None for t in self.tokens)

    @property
    def has_top_logprobs(self) -> bool:
        return self.tokens is not None and any(t.top for t in self.tokens)


@dataclass(frozen=True, slots=True)
class PromptComparison:
    """One prompt: the other engine's answer against the reference's."""

    exact_match: bool
    unit: Unit
    first_divergence: int | None
    reference_length: int
    other_length: int
    token_agreement: float
    #: None when either engine reported no log-probabilities.
    logprob_diff: float | None
    #: Positions checked for top-k agreement, and how many had the reference's token in the top-k.
    topk_checked: int
    topk_hits: int
    divergence_margin: float | None

    @property
    def diverged(self) -> bool:
        return self.first_divergence is not None

    @property
    def topk_rate(self) -> float | None:
        return self.topk_hits / self.topk_checked if self.topk_checked else None

    def to_dict(self) -> JsonOut:
        return {
            "exact_match": self.exact_match,
            "unit": self.unit,
            "first_divergence": self.first_divergence,
            "reference_length": self.reference_length,
            "other_length": self.other_length,
            "token_agreement": self.token_agreement,
            "logprob_diff": self.logprob_diff,
            "topk_checked": self.topk_checked,
            "topk_hits": self.topk_hits,
            "topk_rate": self.topk_rate,
            "divergence_margin": self.divergence_margin,
        }


def parse_answer(message_text: str | None, logprobs: Any, usage: Mapping[str, Any] | None) -> Answer:
    """An Answer from an OpenAI chat completion's choice: `message.content`, `logprobs`
    (`{"content": [{"token", "logprob", "top_logprobs": [...]}]}`) and `usage`. Anything
    malformed in the logprobs (an engine's own shape, nulls) counts as not reported."""
    text = message_text if isinstance(message_text, str) else ""
    completion = (
        token_count((usage or {}).get("completion_tokens")) if isinstance(usage, Mapping) else None
    )
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list) or (not content and text):
        return Answer(text=text, tokens=None, completion_tokens=completion)
    tokens: list[TokenChoice] = []
    for entry in content:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("token"), str):
            return Answer(text=text, tokens=None, completion_tokens=completion)
        top: dict[str, float] = {}
        for alternative in entry.get("top_logprobs") or []:
            if isinstance(alternative, Mapping) and isinstance(alternative.get("token"), str):
                value = units.number(alternative.get("logprob"))
                if value is not None:
                    # The first of two equal token strings wins: the most likely one comes first.
                    top.setdefault(alternative["token"], value)
        tokens.append(
            TokenChoice(token=entry["token"], logprob=units.number(entry.get("logprob")), top=top)
        )
    return Answer(text=text, tokens=tuple(tokens), completion_tokens=completion)


def words(text: str) -> list[str]:
    return re.findall(r"\S+", text or "")


def first_divergence(reference: Sequence[str], other: Sequence[str]) -> int | None:
    """The first position where the two sequences differ; None when they are equal."""
    for position, (a, b) in enumerate(zip(reference, other)):
        if a != b:
            return position
    if len(reference) != len(other):
        return min(len(reference), len(other))
    return None


def compare(reference: Answer, other: Answer) -> PromptComparison:
    """The other engine's answer against the reference's, by the module's definitions."""
    by_tokens = reference.tokens is not None and other.tokens is not None
    unit: Unit = "token" if by_tokens else "word"
    ref_units = (
        [t.token for t in reference.tokens]
        if by_tokens and reference.tokens is not None
        else words(reference.text)
    )
    other_units = (
        [t.token for t in other.tokens] if by_tokens and other.tokens is not None else words(other.text)
    )
    divergence = first_divergence(ref_units, other_units)
    if reference.text == other.text and divergence is not None and by_tokens:
        # The same text tokenised differently (two tokenizers): the answers match all the same.
        divergence = None
    common = min(len(ref_units), len(other_units))
    if common:
        agreement = sum(1 for a, b in zip(ref_units, other_units) if a == b) / common
    else:
        agreement = 1.0 if len(ref_units) == len(other_units) else 0.0
    shared = common if divergence is None else divergence
    logprob_diff = None
    checked = hits = 0
    margin = None
    if by_tokens and reference.tokens is not None and other.tokens is not None:
        differences = [
            abs(a.logprob - b.logprob)
            for a, b in zip(reference.tokens[:shared], other.tokens[:shared])
            if a.logprob is not None and b.logprob is not None
        ]
        if reference.has_logprobs and other.has_logprobs:
            logprob_diff = math.fsum(differences) / len(differences) if differences else 0.0
        if other.has_top_logprobs:
            last = min(shared + 1, common) if divergence is not None else common
            for ref_token, other_token in zip(reference.tokens[:last], other.tokens[:last]):
                checked += 1
                hits += ref_token.token in other_token.top
            if divergence is not None and divergence < common:
                at = other.tokens[divergence]
                reference_text = reference.tokens[divergence].token
                chosen = at.logprob if at.logprob is not None else at.top.get(at.token)
                if reference_text in at.top and chosen is not None:
                    margin = chosen - at.top[reference_text]
    return PromptComparison(
        exact_match=reference.text == other.text,
        unit=unit,
        first_divergence=divergence,
        reference_length=len(ref_units),
        other_length=len(other_units),
        token_agreement=agreement,
        logprob_diff=logprob_diff,
        topk_checked=checked,
        topk_hits=hits,
        divergence_margin=margin,
    )


@dataclass(frozen=True, slots=True)
class PooledComparison:
    """One engine's prompts pooled against the reference."""

    compared: int
    exact_match_rate: float | None
    diverged: int
    #: Divergence positions of the prompts that diverged (the distribution's values).
    divergence_positions: tuple[int, ...]
    divergence_median: float | None
    divergence_p10: float | None
    divergence_p90: float | None
    token_agreement_mean: float | None
    logprob_diff_mean: float | None
    topk_rate: float | None
    units: tuple[str, ...]

    def to_dict(self) -> JsonOut:
        return {
            "compared": self.compared,
            "exact_match_rate": self.exact_match_rate,
            "diverged": self.diverged,
            "divergence_positions": list(self.divergence_positions),
            "divergence_median": self.divergence_median,
            "divergence_p10": self.divergence_p10,
            "divergence_p90": self.divergence_p90,
            "token_agreement_mean": self.token_agreement_mean,
            "logprob_diff_mean": self.logprob_diff_mean,
            "topk_rate": self.topk_rate,
            "units": list(self.units),
        }


def summarise(comparisons: Sequence[PromptComparison]) -> PooledComparison:
    """Pool one engine's prompt comparisons."""
    count = len(comparisons)
    positions = tuple(c.first_divergence for c in comparisons if c.first_divergence is not None)
    diffs = [c.logprob_diff for c in comparisons if c.logprob_diff is not None]
    checked = sum(c.topk_checked for c in comparisons)
    return PooledComparison(
        compared=count,
        exact_match_rate=sum(c.exact_match for c in comparisons) / count if count else None,
        diverged=len(positions),
        divergence_positions=positions,
        divergence_median=percentile(positions, 50) if positions else None,
        divergence_p10=percentile(positions, 10) if positions else None,
        divergence_p90=percentile(positions, 90) if positions else None,
        token_agreement_mean=math.fsum(c.token_agreement for c in comparisons) / count
        if count
        else None,
        logprob_diff_mean=math.fsum(diffs) / len(diffs) if diffs else None,
        topk_rate=sum(c.topk_hits for c in comparisons) / checked if checked else None,
        units=tuple(sorted({c.unit for c in comparisons})),
    )
