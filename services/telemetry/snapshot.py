"""`Snapshot`: one reading of one source (an engine or a GPU) at one time, and the form
it takes in the database (`db.models.Sample.values`).

Row format (a JSON object): each signal the source exposes maps to a number, or to null
when it is exposed but had no data in the window; signals the source does not expose are
left out. Keys starting with "_" are metadata: `_kind` (engine kind or "gpu"), `_label`
(what "not reported by ..." names), `_error` (why the source could not be read; no
signals then) and, for GPUs, `_processes` (per-process GPU memory).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TypedDict

from services.core import stored_json
from services.core.json_types import JsonOut
from services.engines.signals import SIGNALS, SourceGroup, not_reported, signal_names


class GpuProcess(TypedDict, total=False):
    """One process on a GPU, as a GPU snapshot keeps it under `_processes`: from NVML's list
    (pid, memory, name, engine), or a dcgm-exporter's pod labels (a name, no pid)."""

    pid: int
    #: The most GPU memory NVML gave for it (None: not told).
    used_bytes: int | None
    name: str
    #: The engine whose command line it is (services/telemetry/gpu.py), when one is known.
    engine: str


#: A Sample row's values (`Snapshot.to_row`): each signal to a number or null, and the "_" keys.
SampleRow = dict[str, float | int | str | list[GpuProcess] | None]


@dataclass(frozen=True)
class Reading:
    """One signal of one snapshot: a value, or None and the reason."""

    value: float | None
    reason: str | None = None
    note: str | None = None


def _compact(value: float | None) -> float | None:
    # Whole numbers (bytes, tokens, requests) stay exact; fractions keep six significant
    # digits: the rows stay small and nothing plotted loses precision.
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return float(f"{value:.6g}")


@dataclass
class Snapshot:
    source: str
    kind: str
    label: str
    ts: float
    values: dict[str, float | None] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    processes: list[GpuProcess] = field(default_factory=list)

    @property
    def group(self) -> SourceGroup:
        return "gpu" if self.kind == "gpu" else "engine"

    def reading(self, signal: str) -> Reading:
        if signal in self.values:
            value = self.values[signal]
            reason = None if value is not None else "no data in the window"
            return Reading(value, reason, self.notes.get(signal))
        if self.error:
            return Reading(None, self.error)
        return Reading(None, self.missing.get(signal) or not_reported(self.label))

    def shown_signals(self) -> tuple[str, ...]:
        """Every signal of the source's group, then what only this source reports (a router's
        worker health), known by name or not."""
        group_names = signal_names(self.group)
        return group_names + tuple(n for n in self.values if n not in group_names)

    def to_row(self) -> SampleRow:
        row: SampleRow = {name: _compact(value) for name, value in self.values.items()}
        row["_kind"] = self.kind
        row["_label"] = self.label
        if self.error:
            row["_error"] = self.error
        if self.processes:
            row["_processes"] = self.processes
        return row

    @classmethod
    def from_row(cls, source: str, ts: float, row: SampleRow) -> Snapshot:
        kind = str(row.get("_kind") or "openai")
        label = str(row.get("_label") or kind)
        error = stored_json.text(row.get("_error"))
        stored = row.get("_processes")
        values = {
            k: (None if v is None else float(v))
            for k, v in row.items()
            if not k.startswith("_") and not isinstance(v, list)
        }
        group: SourceGroup = "gpu" if kind == "gpu" else "engine"
        missing = (
            {}
            if error
            else {name: not_reported(label) for name in signal_names(group) if name not in values}
        )
        return cls(
            source=source,
            kind=kind,
            label=label,
            ts=ts,
            values=values,
            missing=missing,
            error=error,
            processes=list(stored) if isinstance(stored, list) else [],
        )

    def to_json(self) -> JsonOut:
        """The `scrape --json` / API form: every signal of the source's group with its
        value, unit and, when there is no value, the reason."""
        signals: dict[str, JsonOut] = {}
        for name in self.shown_signals():
            reading = self.reading(name)
            entry: JsonOut = {
                "value": reading.value,
                "unit": SIGNALS[name].unit if name in SIGNALS else "",
            }
            if reading.value is None:
                entry["status"] = "no_data" if name in self.values else "not_reported"
                entry["reason"] = reading.reason
            else:
                entry["status"] = "ok"
            if reading.note:
                entry["note"] = reading.note
            signals[name] = entry
        payload: JsonOut = {
            "source": self.source,
            "kind": self.kind,
            "label": self.label,
            "ts": self.ts,
            "error": self.error,
            "signals": signals,
        }
        if self.group == "gpu":
            payload["processes"] = self.processes
        return payload
