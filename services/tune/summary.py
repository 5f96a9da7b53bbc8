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
from typing import Any, Self, TypedDict, cast

from services.bench.results import EngineResults, results_by_engine
from services.core import stored_json
from services.core.json_types import JsonOut
from services.core.stored_json import Stored, stored


class TuneConfigEntry(TypedDict, total=False):
    """One configuration's entry as services/tune/jobs.py builds, updates and stores it (a run of
    an older version may lack a key: read with `.get`)."""

    index: int
    label: str
    #: The settings it varies, and those with the spec's base settings.
    settings: dict[str, str]
    full_settings: dict[str, str]
    #: not_run, starting, running, finished, finished_with_errors, failed_to_start, crashed,
    #: cancelled.
    status: str
    reason: str | None
    log_tail: str | None
    pid: int | None
    port: int | None
    command: list[str] | None
    #: What the engine said of its own settings (services/engines/reported.py).
    reported: JsonOut
    #: Its benchmark's `EngineResults.to_json()` (None: it did not run); read as `TunedConfig`.
    metrics: JsonOut | None
    #: One `EngineResults.to_json()` per load level, with its "level".
    sweep: list[JsonOut]


class LaunchCommands(TypedDict, total=False):
    """A configuration's launch commands (services/tune/commands.py `launch_commands`)."""

    plain: str
    docker: str


class BestChoice(TypedDict, total=False):
    """The chosen configuration: label (None: none qualified), why, and with a winner its full
    settings and launch commands."""

    label: str | None
    reason: str
    settings: dict[str, str]
    launch: LaunchCommands


class CheapestChoice(TypedDict, total=False):
    """The cheapest configuration meeting the SLOs: label (None: none), why, launch commands."""

    label: str | None
    reason: str
    launch: LaunchCommands


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
    def from_json(cls, entry: TuneConfigEntry | Self) -> Self:
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


def tuned_configs(entries: Sequence[TuneConfigEntry | TunedConfig]) -> list[TunedConfig]:
    return [TunedConfig.from_json(entry) for entry in entries]


def _entries(value: Any) -> list[TuneConfigEntry]:
    # The entries as stored: the views read them through `TunedConfig`, the worker resumes them.
    return cast(list[TuneConfigEntry], stored_json.dicts(value))


def _best(value: Any) -> BestChoice:
    return cast(BestChoice, stored_json.mapping(value))


def _cheapest(value: Any) -> CheapestChoice:
    return cast(CheapestChoice, stored_json.mapping(value))


@dataclass(frozen=True)
class TuneSummary(Stored):
    #: One entry per configuration tried, in order: label, settings, status, metrics, sweep...
    configs: list[TuneConfigEntry] = stored(_entries, factory=list)
    #: Configuration label -> its benchmark block (a "not run" block for those that did not run).
    engines: dict[str, EngineResults] = stored(results_by_engine, factory=dict)
    #: Metric ("ttft_s", "itl_s") -> the labels on its Pareto front.
    pareto: dict[str, list[str]] = stored(stored_json.text_lists, factory=dict)
    #: The chosen configuration: label (None: none qualified), reason, settings, launch commands.
    best: BestChoice = stored(_best, factory=dict)
    kind: str | None = stored(stored_json.nonempty_text, default=None)
    load: str | None = stored(stored_json.nonempty_text, default=None)
    workload: str | None = stored(stored_json.nonempty_text, default=None)
    #: Written as None without SLOs, as analyse always wrote it.
    slo: str | None = stored(stored_json.nonempty_text, default=None)
    conclusion_headline: str | None = stored(stored_json.nonempty_text, default=None)
    #: The cheapest configuration meeting the SLOs (label, reason, launch); empty for a run
    #: stored before prices (services/tune/pareto.py `cheapest_configuration`). Written last, as
    #: it was when it travelled in `extra`.
    cheapest: CheapestChoice = stored(_cheapest, factory=dict, write="unless_empty")
    #: Keys this version does not know, written back as they were.
    extra: JsonOut = stored(stored_json.mapping, factory=dict)

    @property
    def best_label(self) -> str | None:
        return stored_json.nonempty_text(self.best.get("label"))

    @property
    def best_reason(self) -> str:
        return str(self.best.get("reason") or "")

    @property
    def launch(self) -> LaunchCommands:
        """The winner's launch commands ("plain", "docker"); empty without a winner."""
        return launch_of(self.best)

    @property
    def best_settings(self) -> dict[str, str]:
        return stored_json.texts(self.best.get("settings"))

    @property
    def tuned(self) -> list[TunedConfig]:
        """The configurations, in order, each read once."""
        return tuned_configs(self.configs)

    def on_front(self) -> set[str]:
        """Labels on either Pareto front (TTFT or ITL against throughput)."""
        return {label for labels in self.pareto.values() for label in labels}


def launch_of(choice: BestChoice | CheapestChoice) -> LaunchCommands:
    """A choice's launch commands as text (an odd stored value: none)."""
    found = stored_json.mapping(choice.get("launch"))
    commands: LaunchCommands = {}
    for key in ("plain", "docker"):
        text = stored_json.text(found.get(key))
        if text is not None:
            commands[key] = text
    return commands
