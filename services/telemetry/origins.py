"""When each engine (each sweep step) of a benchmark started, read from its stored summary:
request times count from there, as a benchmark measures engines one after another, and the
telemetry of a run is drawn on that clock (query.run_telemetry, bench's charts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def start_times(
    sweep: Sequence[Mapping[str, Any]], engines: Mapping[str, Mapping[str, Any]]
) -> dict[tuple[str, int | None], float]:
    """Unix time of each sweep row's (engine, step) and each engine block's (engine, None)
    start. Empty for runs that did not say."""
    starts: dict[tuple[str, int | None], float] = {}
    for row in sweep:
        started = row.get("started_at_unix")
        if isinstance(started, (int, float)) and started:
            starts[(str(row.get("engine")), row.get("step"))] = float(started)
    for name, block in engines.items():
        started = block.get("started_at_unix")
        if isinstance(started, (int, float)) and started and "from_step" not in block:
            starts[(name, None)] = float(started)
    return starts
