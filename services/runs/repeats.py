"""Why two runs that look alike are not repeats of one setup.

Repeats (services/runs/series.py `attach_repeats`) share the run's configuration fingerprint
(db/models.py `run_fingerprint`: kind, model, workload and the measuring config) and the engine's
kind, model and version. Two runs whose comparability fingerprints agree can still miss that (a
seed, a client setting, an engine's address): without repeats their noise is judged within each
run only, so a comparison names the field that kept them apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from db.models import FINGERPRINT_IGNORED_CONFIG_KEYS, FINGERPRINT_IGNORED_ENGINE_KEYS, Run
from services.bench.comparability import ComparabilityVerdict
from services.core import stored_json
from services.runs.records import Series
from services.runstate.stored import StoredEngine, engine_named

#: At most this many differing fields are named per pair.
MAX_NAMED = 5
_VALUE_CHARS = 60


def _text(value: Any) -> str:
    text = "not set" if value is None else str(value)
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"


def _flat(config: Any) -> dict[str, object]:
    """The measuring config (a stored Run.config) as `key` / `engines[NAME].key` paths, without
    what repeats ignore. The values stay opaque: compared for equality and printed, never read."""
    flat: dict[str, object] = {}
    for key, value in stored_json.mapping(config).items():
        if key in FINGERPRINT_IGNORED_CONFIG_KEYS:
            continue
        if key == "engines" and isinstance(value, list):
            for index, engine in enumerate(value):
                if not isinstance(engine, dict):
                    flat[f"engines[{index}]"] = engine
                    continue
                name = engine.get("name", index)
                for sub, item in engine.items():
                    if sub not in FINGERPRINT_IGNORED_ENGINE_KEYS:
                        flat[f"engines[{name}].{sub}"] = item
        elif isinstance(value, dict):
            for sub, item in value.items():
                flat[f"{key}.{sub}"] = item
        else:
            flat[key] = value
    return flat


def differing_fields(a: Run, b: Run, a_engine: str, b_engine: str) -> list[str]:
    """What keeps run `b` from being a repeat of run `a`, field by field ("seed: 1 vs 2")."""
    out = [
        f"{name}: {_text(x)} vs {_text(y)}"
        for name, x, y in (
            ("kind", a.kind, b.kind),
            ("model", a.model, b.model),
            ("workload", a.workload, b.workload),
        )
        if x != y
    ]
    first, second = _flat(a.config), _flat(b.config)
    out += [
        f"{key}: {_text(first.get(key))} vs {_text(second.get(key))}"
        for key in sorted(set(first) | set(second))
        if first.get(key) != second.get(key)
    ]
    engine_a = engine_named(a.engines, a_engine) or StoredEngine()
    engine_b = engine_named(b.engines, b_engine) or StoredEngine()
    for field in ("kind", "model", "version"):
        x: object = engine_a.get(field)
        y: object = engine_b.get(field)
        if field == "version":
            x = x or stored_json.mapping(engine_a.get("reported")).get("version")
            y = y or stored_json.mapping(engine_b.get("reported")).get("version")
        if x != y:
            out.append(f"engine {field}: {_text(x)} vs {_text(y)}")
    return out


def not_repeat_notes(
    runs: dict[int, Run],
    series: Sequence[Series],
    baseline: int,
    verdicts: Sequence[ComparabilityVerdict],
) -> list[str]:
    """For each series that is comparable with the baseline, measured by the same engine, and
    yet not a stored repeat of it: one line naming what differs."""
    base = series[baseline]
    others = [s for i, s in enumerate(series) if i != baseline]
    notes = []
    for item, verdict in zip(others, verdicts, strict=False):
        if item.run_id == base.run_id or item.run_id in base.repeat_run_ids:
            continue
        if not verdict.comparable or verdict.engine_changes:
            continue
        fields = differing_fields(runs[base.run_id], runs[item.run_id], base.engine, item.engine)
        if not fields:
            continue
        more = f" and {len(fields) - MAX_NAMED} more" if len(fields) > MAX_NAMED else ""
        notes.append(
            f"{item.label} looks like a repeat of {base.label} but is not one (its noise is judged "
            f"within each run only): {'; '.join(fields[:MAX_NAMED])}{more}"
        )
    return notes
