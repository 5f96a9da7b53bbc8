"""A tuning run's summary (Run.summary of kind "tune") as one typed record.

services/tune/jobs.py `analyse` builds it from the configurations' entries and stores
`to_json()`; the views, the CLI, the page and the demos read it through `from_json`, which
takes what any version stored and never raises on a missing or odd key. Each configuration
stays a mapping (its settings, status, metrics, sweep), as the Pareto code reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services import stored_json

_KNOWN = (
    "configs",
    "engines",
    "pareto",
    "best",
    "kind",
    "load",
    "workload",
    "slo",
    "conclusion_headline",
)


@dataclass(frozen=True)
class TuneSummary:
    #: One entry per configuration tried, in order: label, settings, status, metrics, sweep...
    configs: list[dict[str, Any]] = field(default_factory=list)
    #: Configuration label -> its benchmark block (a "not run" block for those that did not run).
    engines: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Metric ("ttft_s", "itl_s") -> the labels on its Pareto front.
    pareto: dict[str, list[str]] = field(default_factory=dict)
    #: The chosen configuration: label (None: none qualified), reason, settings, launch commands.
    best: dict[str, Any] = field(default_factory=dict)
    kind: str | None = None
    load: str | None = None
    workload: str | None = None
    slo: str | None = None
    conclusion_headline: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: TuneSummary | dict[str, Any] | None) -> TuneSummary:
        if isinstance(data, TuneSummary):
            return data
        data = data if isinstance(data, dict) else {}
        return cls(
            configs=[c for c in data.get("configs") or [] if isinstance(c, dict)],
            engines={
                str(k): v
                for k, v in stored_json.mapping(data.get("engines")).items()
                if isinstance(v, dict)
            },
            pareto={
                str(k): [str(label) for label in v]
                for k, v in stored_json.mapping(data.get("pareto")).items()
                if isinstance(v, list)
            },
            best=stored_json.mapping(data.get("best")),
            kind=stored_json.nonempty_text(data.get("kind")),
            load=stored_json.nonempty_text(data.get("load")),
            workload=stored_json.nonempty_text(data.get("workload")),
            slo=stored_json.nonempty_text(data.get("slo")),
            conclusion_headline=stored_json.nonempty_text(data.get("conclusion_headline")),
            extra={k: v for k, v in data.items() if k not in _KNOWN},
        )

    def to_json(self) -> dict[str, Any]:
        """The stored shape, every key present (`slo` None without SLOs), as analyse wrote it."""
        return {
            "configs": self.configs,
            "engines": self.engines,
            "pareto": self.pareto,
            "best": self.best,
            "kind": self.kind,
            "load": self.load,
            "workload": self.workload,
            "slo": self.slo,
            "conclusion_headline": self.conclusion_headline,
            **self.extra,
        }

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

    def on_front(self) -> set[str]:
        """Labels on either Pareto front (TTFT or ITL against throughput)."""
        return {label for labels in self.pareto.values() for label in labels}
