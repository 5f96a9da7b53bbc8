"""A tuning run's summary (Run.summary of kind "tune") as one typed record.

services/tune/jobs.py `analyse` builds it from the configurations' entries and stores
`to_json()`; the views, the CLI, the page and the demos read it through `from_json`, which
takes what any version stored and never raises on a missing or odd key. Each configuration is
stored as a mapping (its settings, status, metrics, sweep) and read as a `TunedConfig`, its
figures typed results (services/bench/results.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from services.bench.results import EngineResults, results_by_engine
from services.core import stored_json
from services.core.stored_json import Stored, stored


@dataclass(frozen=True)
class TunedStep:
    """One load level of a configuration's sweep: the level and the results there."""

    level: float | None
    results: EngineResults


@dataclass(frozen=True)
class TunedConfig:
    """One configuration's entry as the Pareto code and the views read it."""

    label: str
    status: str = ""
    reason: str = ""
    #: Its benchmark's results; None when it did not run.
    metrics: EngineResults | None = None
    sweep: tuple[TunedStep, ...] = ()

    @classmethod
    def from_json(cls, entry: Mapping[str, Any] | Self) -> Self:
        if isinstance(entry, cls):
            return entry
        data = stored_json.mapping(entry)
        metrics = data.get("metrics")
        return cls(
            label=str(data.get("label") or ""),
            status=str(data.get("status") or ""),
            reason=str(data.get("reason") or ""),
            metrics=EngineResults.from_json(metrics)
            if isinstance(metrics, Mapping) and metrics
            else None,
            sweep=tuple(
                TunedStep(stored_json.number(row.get("level")), EngineResults.from_json(row))
                for row in stored_json.dicts(data.get("sweep"))
            ),
        )

    @property
    def steps(self) -> list[tuple[float | None, EngineResults]]:
        """Its load levels with their results, or its one result (level None) without a sweep."""
        if self.sweep:
            return [(step.level, step.results) for step in self.sweep]
        return [(None, self.metrics)] if self.metrics is not None else []


def tuned_configs(entries: Sequence[Mapping[str, Any] | TunedConfig]) -> list[TunedConfig]:
    return [TunedConfig.from_json(entry) for entry in entries]


@dataclass(frozen=True)
class TuneSummary(Stored):
    #: One entry per configuration tried, in order: label, settings, status, metrics, sweep...
    configs: list[dict[str, Any]] = stored(stored_json.dicts, factory=list)
    #: Configuration label -> its benchmark block (a "not run" block for those that did not run).
    engines: dict[str, EngineResults] = stored(results_by_engine, factory=dict)
    #: Metric ("ttft_s", "itl_s") -> the labels on its Pareto front.
    pareto: dict[str, list[str]] = stored(stored_json.text_lists, factory=dict)
    #: The chosen configuration: label (None: none qualified), reason, settings, launch commands.
    best: dict[str, Any] = stored(stored_json.mapping, factory=dict)
    kind: str | None = stored(stored_json.nonempty_text, default=None)
    load: str | None = stored(stored_json.nonempty_text, default=None)
    workload: str | None = stored(stored_json.nonempty_text, default=None)
    #: Written as None without SLOs, as analyse always wrote it.
    slo: str | None = stored(stored_json.nonempty_text, default=None)
    conclusion_headline: str | None = stored(stored_json.nonempty_text, default=None)
    extra: dict[str, Any] = stored(stored_json.mapping, factory=dict)

    @property
    def best_label(self) -> str | None:
        return stored_json.nonempty_text(self.best.get("label"))

    @property
    def best_reason(self) -> str:
        return str(self.best.get("reason") or "")

    @property
    def launch(self) -> dict[str, Any]:
        """The winner's launch commands ("plain", "docker"); empty without a winner."""
        return stored_json.mapping(self.best.get("launch"))

    @property
    def best_settings(self) -> dict[str, Any]:
        return stored_json.mapping(self.best.get("settings"))

    @property
    def cheapest(self) -> dict[str, Any]:
        """The cheapest configuration meeting the SLOs (label, reason, launch); empty for a run
        stored before prices (services/tune/pareto.py `cheapest_configuration`)."""
        return stored_json.mapping(self.extra.get("cheapest"))

    @property
    def tuned(self) -> list[TunedConfig]:
        """The configurations, in order, each read once."""
        return tuned_configs(self.configs)

    def on_front(self) -> set[str]:
        """Labels on either Pareto front (TTFT or ITL against throughput)."""
        return {label for labels in self.pareto.values() for label in labels}
