"""The engines side by side: a feature matrix where every cell names its source, and a
decision helper that ranks engines against the user's constraints and says why.

Both are data, and each engine's rows live in its own package
(`services/engines/<kind>/reference.py`): its cells, the hardware it runs on, and its score and
reason per constraint value. Adding an engine or a rule means adding rows, not branches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from services.engines.launching import launches
from services.engines.reference import Cell, RuleKey, references

__all__ = [
    "Cell",
    "Constraints",
    "Ranking",
    "Tables",
    "feature_matrix",
    "feature_rows",
    "rank_engines",
    "tables",
]

FEATURES: list[str] = [
    "Paged KV cache",
    "Prefix caching",
    "Continuous batching",
    "Quantisation formats",
    "Structured output",
    "Speculative decoding",
    "Multi-GPU (TP/PP/EP)",
    "Hardware",
    "Prometheus metrics",
]


def feature_rows() -> list[dict[str, str]]:
    """Long form: one row per engine x feature, with its source (for a table with links)."""
    found = tables()
    labels, matrix = found.engines, found.matrix
    return [
        {
            "engine": labels[kind],
            "feature": feature,
            "value": cells[feature].value,
            "source": cells[feature].source,
        }
        for kind, cells in matrix.items()
        for feature in FEATURES
    ]


def feature_matrix() -> dict[str, dict[str, str]]:
    """Wide form: feature -> engine label -> value."""
    found = tables()
    labels, matrix = found.engines, found.matrix
    return {feature: {labels[k]: matrix[k][feature].value for k in matrix} for feature in FEATURES}


# ---- decision helper -------------------------------------------------------------

Hardware = Literal["nvidia-datacenter", "nvidia-consumer", "amd", "apple", "cpu", "intel-gaudi"]
Traffic = Literal["single-user", "interactive", "high-throughput", "offline-batch"]
PrefixSharing = Literal["none", "some", "heavy"]
Operations = Literal["simplest", "standard", "max-performance"]
ModelFormat = Literal["hf", "gguf"]


@dataclass(frozen=True)
class Constraints:
    hardware: Hardware = "nvidia-datacenter"
    gpus: int = 1
    traffic: Traffic = "interactive"
    prefix_sharing: PrefixSharing = "some"
    structured_output: bool = False
    operations: Operations = "standard"
    model_format: ModelFormat = "hf"


@dataclass
class Ranking:
    kind: str
    label: str
    score: int
    supported: bool
    reasons: list[str] = field(default_factory=list)
    #: 1 for the best score; engines with equal scores share a place (None: not an option).
    place: int | None = None
    tied: bool = False

    @property
    def place_label(self) -> str:
        """ "1", "2 (tie)", or "—" for an engine that does not run on the hardware."""
        if self.place is None:
            return "—"
        return f"{self.place} (tie)" if self.tied else str(self.place)


Rule = dict[str, tuple[int, str]]

#: The constraints in the order their reasons are listed, then ("gpus", "several") with more
#: than one GPU and ("maintenance", True) always.
CONSTRAINTS = (
    "traffic",
    "prefix_sharing",
    "structured_output",
    "operations",
    "model_format",
    "hardware",
)


_SPECIAL = {("gpus", "several"), ("maintenance", True)}


@dataclass(frozen=True)
class Tables:
    """The engines' rows gathered from their packages, in the Planner's order of kinds."""

    engines: dict[str, str]  # kind -> label
    matrix: dict[str, dict[str, Cell]]
    hardware_support: dict[str, set[str]]
    #: (constraint name, value) -> per-engine (score, why). Missing engines score 0.
    rules: dict[RuleKey, Rule]
    multi_gpu: Rule
    maintenance: Rule


def tables() -> Tables:
    found = references()
    labels = {kind: launch.label for kind, launch in launches().items() if kind in found}
    if set(found) - set(labels):
        raise TypeError(
            f"Kinds with a reference.py need a launch.py: {sorted(set(found) - set(labels))}."
        )
    rules: dict[RuleKey, Rule] = {}
    for kind in labels:
        for key, score in found[kind].scores.items():
            if key[0] not in CONSTRAINTS and key not in _SPECIAL:
                raise TypeError(
                    f"services/engines/{kind}/reference.py scores an unknown constraint {key}."
                )
            rules.setdefault(key, {})[kind] = score
    return Tables(
        engines=labels,
        matrix={kind: dict(found[kind].cells) for kind in labels},
        hardware_support={kind: set(found[kind].hardware) for kind in labels},
        rules={key: rule for key, rule in rules.items() if key not in _SPECIAL},
        multi_gpu=rules.get(("gpus", "several"), {}),
        maintenance=rules.get(("maintenance", True), {}),
    )


_TABLE_NAMES = {
    "ENGINES": "engines",
    "MATRIX": "matrix",
    "HARDWARE_SUPPORT": "hardware_support",
    "RULES": "rules",
    "MULTI_GPU": "multi_gpu",
    "MAINTENANCE": "maintenance",
}


def __getattr__(name: str) -> Any:
    # The tables under their former names, read when asked for, so importing the planner does
    # not import every engine kind.
    if name not in _TABLE_NAMES:
        raise AttributeError(name)
    return getattr(tables(), _TABLE_NAMES[name])


def rank_engines(constraints: Constraints) -> list[Ranking]:
    """Engines best-first for the constraints, each with the reasons behind its score."""
    found = tables()
    rankings = {kind: Ranking(kind, label, 0, True) for kind, label in found.engines.items()}
    for kind, ranking in rankings.items():
        if constraints.hardware not in found.hardware_support[kind]:
            ranking.supported = False
            ranking.reasons.append(f"does not run on {constraints.hardware.replace('-', ' ')}")
    applied: list[Rule] = [
        found.rules.get((name, getattr(constraints, name)), {}) for name in CONSTRAINTS
    ]
    if constraints.gpus > 1:
        applied.append(found.multi_gpu)
    applied.append(found.maintenance)
    for rule in applied:
        for kind, (score, reason) in rule.items():
            ranking = rankings[kind]
            ranking.score += score
            if score:
                ranking.reasons.append(("+" if score > 0 else "−") + f"{abs(score)}: {reason}")
    ordered = sorted(rankings.values(), key=lambda r: (not r.supported, -r.score, r.label))
    _place(ordered)
    return ordered


def _place(ordered: list[Ranking]) -> None:
    """Competition places (1, 1, 1, 4): equal scores tie rather than being ranked by name."""
    supported = [r for r in ordered if r.supported]
    for ranking in supported:
        ranking.place = 1 + sum(r.score > ranking.score for r in supported)
        ranking.tied = sum(r.score == ranking.score for r in supported) > 1
