"""A parity run's summary (Run.summary of kind "parity") as one typed record.

views.build_summary computes it from the stored answers; the worker stores `to_json()` at the
end (an empty `{}` until then); the views, the charts, the CLI and the Runs page read it
through `ParitySummary.from_json`, which takes what any version stored and never raises on a
missing or odd value. The stored JSON keeps its shape (`from_json(s).to_json() == s` for every
summary written so far, keys unknown here included): the Runs comparison and the exports read
the engine blocks' `task_score`, `output_throughput_tok_s` and `exact_match_rate` as stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services import stored_json
from services.parity.metrics import PooledComparison

_COMPARISON_KNOWN = (
    "compared",
    "exact_match_rate",
    "diverged",
    "divergence_positions",
    "divergence_median",
    "divergence_p10",
    "divergence_p90",
    "token_agreement_mean",
    "logprob_diff_mean",
    "topk_rate",
    "units",
    "not_compared",
)
_ENGINE_KNOWN = (
    "prompts",
    "sent",
    "completed",
    "failed",
    "task_score",
    "scored",
    "output_throughput_tok_s",
    "completion_tokens",
    "prompt_tokens",
    "e2e_s",
    "logprobs",
    "top_logprobs",
    "errors",
    "first_errors",
    "is_reference",
    "parity",
    "exact_match_rate",
    "token_agreement_mean",
)
_SUMMARY_KNOWN = ("reference", "engines", "conclusion_headline")


@dataclass(frozen=True)
class ParityComparison:
    """One engine's answers pooled against the reference's, as stored."""

    compared: int = 0
    exact_match_rate: float | None = None
    diverged: int = 0
    #: Divergence positions of the prompts that diverged (the distribution's values).
    divergence_positions: list[int] = field(default_factory=list)
    divergence_median: float | None = None
    divergence_p10: float | None = None
    divergence_p90: float | None = None
    token_agreement_mean: float | None = None
    logprob_diff_mean: float | None = None
    topk_rate: float | None = None
    #: "token" where both sides reported tokens, "word" where one did not.
    units: list[str] = field(default_factory=list)
    #: Prompts not compared (either side failed or has not answered).
    not_compared: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def pooled(cls, figures: PooledComparison, not_compared: int) -> ParityComparison:
        return cls.from_json({**figures.to_dict(), "not_compared": not_compared})

    @classmethod
    def from_json(cls, data: Any) -> ParityComparison:
        data = stored_json.mapping(data)
        positions = data.get("divergence_positions")
        units = data.get("units")
        return cls(
            compared=stored_json.count(data.get("compared")),
            exact_match_rate=stored_json.number(data.get("exact_match_rate")),
            diverged=stored_json.count(data.get("diverged")),
            divergence_positions=[int(p) for p in positions or [] if stored_json.number(p) is not None]
            if isinstance(positions, list)
            else [],
            divergence_median=stored_json.number(data.get("divergence_median")),
            divergence_p10=stored_json.number(data.get("divergence_p10")),
            divergence_p90=stored_json.number(data.get("divergence_p90")),
            token_agreement_mean=stored_json.number(data.get("token_agreement_mean")),
            logprob_diff_mean=stored_json.number(data.get("logprob_diff_mean")),
            topk_rate=stored_json.number(data.get("topk_rate")),
            units=[str(u) for u in units] if isinstance(units, list) else [],
            not_compared=stored_json.count(data.get("not_compared")),
            extra={k: v for k, v in data.items() if k not in _COMPARISON_KNOWN},
        )

    def to_json(self) -> dict[str, Any]:
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
            "not_compared": self.not_compared,
            **self.extra,
        }


@dataclass(frozen=True)
class ParityEngine:
    """One engine's block: its answers, task score and speed, and (unless it is the
    reference) its parity figures against the reference."""

    prompts: int = 0
    sent: int = 0
    completed: int = 0
    failed: int = 0
    #: Share of the scored answers that were right (None: none could be scored).
    task_score: float | None = None
    scored: int = 0
    #: Completion tokens over request time of the answers that finished.
    output_throughput_tok_s: float | None = None
    completion_tokens: int = 0
    prompt_tokens: int = 0
    #: measure.describe of the answers' request times (mean, percentiles, min, max, std).
    e2e_s: dict[str, Any] = field(default_factory=dict)
    #: "reported", or "not reported by <engine kind>".
    logprobs: str = ""
    top_logprobs: str = ""
    #: Error class -> failed answers of that class.
    errors: dict[str, int] = field(default_factory=dict)
    #: The first few distinct error messages.
    first_errors: list[str] = field(default_factory=list)
    is_reference: bool = False
    #: None for the reference (nothing to compare it with).
    parity: ParityComparison | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> ParityEngine:
        data = stored_json.mapping(data)
        parity = data.get("parity")
        errors = stored_json.mapping(data.get("errors"))
        first_errors = data.get("first_errors")
        return cls(
            prompts=stored_json.count(data.get("prompts")),
            sent=stored_json.count(data.get("sent")),
            completed=stored_json.count(data.get("completed")),
            failed=stored_json.count(data.get("failed")),
            task_score=stored_json.number(data.get("task_score")),
            scored=stored_json.count(data.get("scored")),
            output_throughput_tok_s=stored_json.number(data.get("output_throughput_tok_s")),
            completion_tokens=stored_json.count(data.get("completion_tokens")),
            prompt_tokens=stored_json.count(data.get("prompt_tokens")),
            e2e_s=stored_json.mapping(data.get("e2e_s")),
            logprobs=stored_json.text(data.get("logprobs")) or "",
            top_logprobs=stored_json.text(data.get("top_logprobs")) or "",
            errors={str(k): stored_json.count(v) for k, v in errors.items()},
            first_errors=[str(e) for e in first_errors] if isinstance(first_errors, list) else [],
            is_reference=data.get("is_reference") is True,
            parity=ParityComparison.from_json(parity) if isinstance(parity, dict) else None,
            extra={k: v for k, v in data.items() if k not in _ENGINE_KNOWN},
        )

    def to_json(self) -> dict[str, Any]:
        """The stored shape: the headline parity figures also at the top of the block, where
        the Runs comparison reads every kind's figures."""
        out: dict[str, Any] = {
            "prompts": self.prompts,
            "sent": self.sent,
            "completed": self.completed,
            "failed": self.failed,
            "task_score": self.task_score,
            "scored": self.scored,
            "output_throughput_tok_s": self.output_throughput_tok_s,
            "completion_tokens": self.completion_tokens,
            "prompt_tokens": self.prompt_tokens,
            "e2e_s": dict(self.e2e_s),
            "logprobs": self.logprobs,
            "top_logprobs": self.top_logprobs,
            "errors": dict(self.errors),
            "first_errors": list(self.first_errors),
            "is_reference": self.is_reference,
        }
        if self.parity is not None:
            out["parity"] = self.parity.to_json()
            out["exact_match_rate"] = self.parity.exact_match_rate
            out["token_agreement_mean"] = self.parity.token_agreement_mean
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class ParitySummary:
    #: The reference engine's label (None before the run is configured, in odd stored runs).
    reference: str | None = None
    #: Engine label -> its block, in the run's order.
    engines: dict[str, ParityEngine] = field(default_factory=dict)
    #: One line for the Runs list and the page (None until a summary was built).
    conclusion_headline: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: ParitySummary | dict[str, Any] | None) -> ParitySummary:
        if isinstance(data, ParitySummary):
            return data
        data = stored_json.mapping(data)
        return cls(
            reference=stored_json.text(data.get("reference")),
            engines={
                str(label): ParityEngine.from_json(block)
                for label, block in stored_json.mapping(data.get("engines")).items()
                if isinstance(block, dict)
            },
            conclusion_headline=stored_json.text(data.get("conclusion_headline")),
            extra={k: v for k, v in data.items() if k not in _SUMMARY_KNOWN},
        )

    def to_json(self) -> dict[str, Any]:
        """`{}` stays `{}` (a run that has not summarised yet)."""
        out: dict[str, Any] = {}
        if self.engines or self.reference is not None:
            out["reference"] = self.reference
            out["engines"] = {label: block.to_json() for label, block in self.engines.items()}
        if self.conclusion_headline is not None:
            out["conclusion_headline"] = self.conclusion_headline
        out.update(self.extra)
        return out

    @property
    def any_failed(self) -> bool:
        return any(block.failed for block in self.engines.values())

    def comparison(self, label: str) -> ParityComparison:
        """The engine's parity figures; empty ones for the reference or an unknown label."""
        block = self.engines.get(label)
        return block.parity if block is not None and block.parity is not None else ParityComparison()
