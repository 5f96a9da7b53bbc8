"""A parity run's summary (Run.summary of kind "parity") as one typed record.

views.build_summary computes it from the stored answers; the worker stores `to_json()` at the
end (an empty `{}` until then); the views, the charts, the CLI and the Runs page read it
through `ParitySummary.from_json`, which takes what any version stored and never raises on a
missing or odd value. The stored JSON keeps its shape (`from_json(s).to_json() == s` for every
summary written so far, keys unknown here included): the Runs comparison and the exports read
the engine blocks' `task_score`, `output_throughput_tok_s` and `exact_match_rate` as stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.bench.results import Distribution
from services.core import stored_json
from services.core.json_types import JsonOut
from services.core.stored_json import Stored, stored
from services.parity.metrics import PooledComparison


@dataclass(frozen=True)
class ParityComparison(Stored):
    """One engine's answers pooled against the reference's, as stored."""

    compared: int = stored(stored_json.count, default=0)
    exact_match_rate: float | None = stored(stored_json.number, default=None)
    diverged: int = stored(stored_json.count, default=0)
    #: Divergence positions of the prompts that diverged (the distribution's values).
    divergence_positions: list[int] = stored(stored_json.int_list, factory=list)
    divergence_median: float | None = stored(stored_json.number, default=None)
    divergence_p10: float | None = stored(stored_json.number, default=None)
    divergence_p90: float | None = stored(stored_json.number, default=None)
    token_agreement_mean: float | None = stored(stored_json.number, default=None)
    logprob_diff_mean: float | None = stored(stored_json.number, default=None)
    topk_rate: float | None = stored(stored_json.number, default=None)
    #: "token" where both sides reported tokens, "word" where one did not.
    units: list[str] = stored(stored_json.text_list, factory=list)
    #: Prompts not compared (either side failed or has not answered).
    not_compared: int = stored(stored_json.count, default=0)
    #: Keys this version does not know, written back as they were.
    extra: JsonOut = stored(stored_json.mapping, factory=dict)

    @classmethod
    def pooled(cls, figures: PooledComparison, not_compared: int) -> ParityComparison:
        return cls.from_json({**figures.to_dict(), "not_compared": not_compared})


def _distribution(value: Any) -> Distribution:
    """The answers' request times as stored ({} for a block without them, written back as {})."""
    return Distribution.from_json(value) or Distribution()


def _comparison(value: Any) -> ParityComparison | None:
    return ParityComparison.from_json(value) if isinstance(value, dict) else None


@dataclass(frozen=True)
class ParityEngine(Stored):
    """One engine's block: its answers, task score and speed, and (unless it is the
    reference) its parity figures against the reference."""

    #: The headline parity figures, also at the top of the block, where the Runs comparison
    #: reads every kind's figures.
    DERIVED = ("exact_match_rate", "token_agreement_mean")

    prompts: int = stored(stored_json.count, default=0)
    sent: int = stored(stored_json.count, default=0)
    completed: int = stored(stored_json.count, default=0)
    failed: int = stored(stored_json.count, default=0)
    #: Share of the scored answers that were right (None: none could be scored).
    task_score: float | None = stored(stored_json.number, default=None)
    scored: int = stored(stored_json.count, default=0)
    #: Completion tokens over request time of the answers that finished.
    output_throughput_tok_s: float | None = stored(stored_json.number, default=None)
    completion_tokens: int = stored(stored_json.count, default=0)
    prompt_tokens: int = stored(stored_json.count, default=0)
    #: measure.describe of the answers' request times (mean, percentiles, min, max, std).
    e2e_s: Distribution = stored(_distribution, factory=Distribution)
    #: "reported", or "not reported by <engine kind>".
    logprobs: str = stored(stored_json.text_or_empty, default="")
    top_logprobs: str = stored(stored_json.text_or_empty, default="")
    #: Error class -> failed answers of that class.
    errors: dict[str, int] = stored(stored_json.counts, factory=dict)
    #: The first few distinct error messages.
    first_errors: list[str] = stored(stored_json.text_list, factory=list)
    is_reference: bool = stored(stored_json.flag, default=False)
    #: None for the reference (nothing to compare it with).
    parity: ParityComparison | None = stored(_comparison, default=None, write="unless_none")
    extra: JsonOut = stored(stored_json.mapping, factory=dict)

    def to_json(self) -> JsonOut:
        out = super().to_json()
        if self.parity is not None:
            out["exact_match_rate"] = self.parity.exact_match_rate
            out["token_agreement_mean"] = self.parity.token_agreement_mean
        return out


def _engines(value: Any) -> dict[str, ParityEngine]:
    return {
        label: ParityEngine.from_json(block) for label, block in stored_json.dict_values(value).items()
    }


@dataclass(frozen=True)
class ParitySummary(Stored):
    #: The reference engine's label (None before the run is configured, in odd stored runs).
    reference: str | None = stored(stored_json.text, default=None)
    #: Engine label -> its block, in the run's order.
    engines: dict[str, ParityEngine] = stored(_engines, factory=dict)
    #: One line for the Runs list and the page (None until a summary was built).
    conclusion_headline: str | None = stored(stored_json.text, default=None, write="unless_none")
    extra: JsonOut = stored(stored_json.mapping, factory=dict)

    def to_json(self) -> JsonOut:
        """`{}` stays `{}` (a run that has not summarised yet)."""
        out = super().to_json()
        if not self.engines and self.reference is None:
            del out["reference"], out["engines"]
        return out

    @property
    def any_failed(self) -> bool:
        return any(block.failed for block in self.engines.values())

    def comparison(self, label: str) -> ParityComparison:
        """The engine's parity figures; empty ones for the reference or an unknown label."""
        block = self.engines.get(label)
        return block.parity if block is not None and block.parity is not None else ParityComparison()
