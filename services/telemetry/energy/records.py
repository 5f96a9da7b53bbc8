"""Energy records: a source's counters at one moment, and a window's result."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from services.core import stored_json
from services.core.json_types import JsonOut

#: How the joules were obtained.
COUNTER = "energy counter"
POWER_SAMPLES = "power samples"

NOT_MEASURED = "not measured here"

#: Energy over a step's window: label, unit, higher is better.
ENERGY_METRICS: dict[str, tuple[str, str, bool]] = {
    "j_per_output_token": ("Energy per output token", "J", False),
    "output_tokens_per_j": ("Output tokens per joule", "tok/J", True),
}


def format_energy(metric: str, value: float | None) -> str:
    """An energy figure as a person reads it: "0.132 J", "7.58 tok/J"; "—" for none."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:,.4g} {ENERGY_METRICS[metric][1]}"


class EnergyUnavailable(Exception):
    """A source that cannot measure here; its message is the reason, in words."""


@dataclass(frozen=True)
class CounterReading:
    """One device's cumulative energy, in joules, at one moment.

    `wrap_j`: the value at which the counter starts again from 0 (RAPL's max_energy_range_uj);
    None for counters that never wrap in practice (NVML's and DCGM's 64-bit millijoules)."""

    device: str
    joules: float
    method: str = COUNTER
    wrap_j: float | None = None


@dataclass(frozen=True)
class EnergyResult:
    """Energy over one benchmark step's window, or why it was not measured.

    `scope` says what the joules cover (which GPUs, shared or not) in words; the per-token
    figures are filled in by the summary, which knows the step's output tokens."""

    joules: float | None = None
    method: str | None = None
    source: str | None = None
    devices: tuple[str, ...] = ()
    scope: str | None = None
    duration_s: float | None = None
    reason: str | None = None
    #: The engines whose load these joules cover: more than one when they ran together.
    engines: tuple[str, ...] = ()
    j_per_output_token: float | None = None
    output_tokens_per_j: float | None = None
    #: The output tokens the per-token figures divide by, and of them the warm-up's: the window
    #: spans the warm-up (and connecting ahead), so its tokens count too.
    output_tokens: int | None = None
    warmup_output_tokens: int | None = None

    @property
    def tokens_counted(self) -> str:
        """Which tokens the per-token figures count, in words ("" for a run stored before it
        said: those divided by the measured requests' tokens alone)."""
        if self.output_tokens is None:
            return ""
        warm = self.warmup_output_tokens or 0
        return f"over {self.output_tokens:,} output tokens" + (
            f", the warm-up's {warm:,} included (the window spans the warm-up)" if warm else ""
        )

    @property
    def measured(self) -> bool:
        return self.joules is not None

    @property
    def label(self) -> str:
        """In words, for tables: the joules and how, or "not measured here: <reason>"."""
        if self.joules is None:
            return f"{NOT_MEASURED}: {self.reason or 'no energy counter'}"
        per_token = (
            f", {self.j_per_output_token:.4g} J/output token {self.tokens_counted}".rstrip()
            if self.j_per_output_token
            else ""
        )
        return f"{self.joules:.1f} J ({self.method}, {self.source}){per_token}"

    def to_json(self) -> JsonOut:
        if self.joules is None:
            return {"measured": False, "reason": self.reason or "no energy counter"}
        return {
            "measured": True,
            "joules": self.joules,
            "method": self.method,
            "source": self.source,
            "devices": list(self.devices),
            "scope": self.scope,
            "duration_s": self.duration_s,
            "engines": list(self.engines),
            "j_per_output_token": self.j_per_output_token,
            "output_tokens_per_j": self.output_tokens_per_j,
            "output_tokens": self.output_tokens,
            "warmup_output_tokens": self.warmup_output_tokens,
        }

    @classmethod
    def from_json(cls, data: Any) -> EnergyResult | None:
        """A stored block; None when the step stored none (runs from before energy)."""
        if not isinstance(data, dict):
            return None
        joules = stored_json.number(data.get("joules")) if data.get("measured") else None
        if joules is None:
            return cls(reason=stored_json.nonempty_text(data.get("reason")) or "no energy counter")
        devices, engines = data.get("devices"), data.get("engines")
        return cls(
            joules=joules,
            method=stored_json.nonempty_text(data.get("method")),
            source=stored_json.nonempty_text(data.get("source")),
            devices=tuple(str(d) for d in devices) if isinstance(devices, list) else (),
            scope=stored_json.nonempty_text(data.get("scope")),
            duration_s=stored_json.number(data.get("duration_s")),
            engines=tuple(str(e) for e in engines) if isinstance(engines, list) else (),
            j_per_output_token=stored_json.number(data.get("j_per_output_token")),
            output_tokens_per_j=stored_json.number(data.get("output_tokens_per_j")),
            output_tokens=_count(data.get("output_tokens")),
            warmup_output_tokens=_count(data.get("warmup_output_tokens")),
        )


def _count(value: Any) -> int | None:
    number = stored_json.number(value)
    return int(number) if number is not None and number >= 0 else None
