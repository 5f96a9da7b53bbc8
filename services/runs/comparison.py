"""Compare runs: series, the metric table against a baseline, verdicts and engine settings."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services.bench import comparability
from services.bench.comparability import weights
from services.bench.time_split import part_note, shown
from services.core import units
from services.core.errors import NotFoundError, ValidationError
from services.engines import get_adapter
from services.runs.records import (
    ANSWER_METRICS,
    COST_METRICS,
    ENERGY_METRICS,
    EQUAL_TOLERANCE,
    LATENCY_METRICS,
    MAX_COMPARED_RUNS,
    QUALITY_METRICS,
    REASONING_COUNTS,
    REASONING_RATES,
    SETTING_VALUE_MAX_CHARS,
    SPLIT_METRICS,
    SPLIT_STATS,
    STAT_LABELS,
    TABLE_STATS,
    THROUGHPUT_METRICS,
    Comparison,
    MetricRow,
    RunDetail,
    Series,
    SettingRow,
    format_value,
)
from services.runs.repeats import not_repeat_notes
from services.runs.series import attach_repeats, build_series, load_samples
from services.runs.verdicts import verdicts_of
from services.runstate import blind
from services.runstate.lifecycle import RunKind


def change_text(change: float | None, mark: str | None) -> str:
    """A change against the baseline as its table cell: a signed percentage, whatever its size.
    One rule for all: "+199.9% worse" next to "3.0× worse" (the old wording from +200%) read
    as a jump from 2 to 3 where the values had barely moved."""
    if mark is None:
        return ""
    if mark == "same":
        return "same"
    if change is None:
        return mark
    return f"{change:+,.1f}% {mark}"


def format_row(
    metric: str, values: Sequence[float | None], unit_from: Sequence[float | None] | None = None
) -> tuple[str, ...]:
    """A metric row's values as its cells, latencies in one unit for the whole row (seconds once
    any reaches a second): one E2E row read "850 ms" beside "1.20 s" (issue 36). `unit_from`:
    the values that choose the unit, e.g. every statistic of the metric, so that its p99 row
    is not in seconds under a p95 row in ms."""
    if metric not in LATENCY_METRICS and metric not in ANSWER_METRICS and metric not in SPLIT_METRICS:
        return tuple(format_value(metric, value) for value in values)
    unit = units.duration_unit(values if unit_from is None else unit_from)
    return tuple(format_value(metric, value, unit) for value in values)


def _mark(
    value: float | None, base: float | None, higher_is_better: bool
) -> tuple[float | None, float | None, str | None]:
    if value is None or base is None:
        return None, None, None
    delta = value - base
    # Per cent of a rest at or below 0 (the engine's clock ran past the client's) means nothing.
    change = (delta / base * 100) if base > 0 else None
    if base == 0 and value == 0:
        return 0.0, 0.0, "same"
    relative = abs(delta) / max(abs(base), abs(value))
    if relative < EQUAL_TOLERANCE:
        return delta, change, "same"
    improved = delta > 0 if higher_is_better else delta < 0
    return delta, change, "better" if improved else "worse"


def _split_stat(series: Series, part: str, stat: str) -> float | None:
    """One statistic of a part of a series' stored time split."""
    found = series.time_split.part(part)
    return found.at(stat) if found is not None else None


def _metric_rows(series: list[Series], baseline: int) -> list[MetricRow]:
    rows: list[MetricRow] = []

    def add(
        metric: str,
        stat: str | None,
        label: str,
        unit: str,
        higher: bool,
        values: list[float | None],
        keep: bool = False,
        notes: tuple[str | None, ...] = (),
        judged: bool = True,
    ) -> None:
        if all(v is None for v in values) and not keep:
            return
        base = values[baseline]
        marks = [
            _mark(v, base, higher) if i != baseline and judged else (None, None, None)
            for i, v in enumerate(values)
        ]
        rows.append(
            MetricRow(
                metric=metric,
                stat=stat,
                label=label,
                unit=unit,
                higher_is_better=higher,
                values=tuple(values),
                deltas=tuple(m[0] for m in marks),
                changes=tuple(m[1] for m in marks),
                marks=tuple(m[2] for m in marks),
                notes=notes if any(notes) else (),
            )
        )

    for metric, name in LATENCY_METRICS.items():
        for stat in TABLE_STATS:
            add(
                metric,
                stat,
                f"{name} {STAT_LABELS[stat]}",
                "s",
                False,
                [s.stats.get(metric, {}).get(stat) for s in series],
            )
    if any(s.ttft_includes_reasoning for s in series):
        # Beside TTFT, which for a thinking engine is its first thinking token.
        for metric, name in ANSWER_METRICS.items():
            for stat in TABLE_STATS:
                add(
                    metric,
                    stat,
                    f"{name} {STAT_LABELS[stat]}",
                    "s",
                    False,
                    [s.stats.get(metric, {}).get(stat) for s in series],
                )
        # Its thinking and its answer apart: their rates per request and their tokens.
        for metric, name in REASONING_RATES.items():
            values = [s.stats.get(metric, {}).get("p50") for s in series]
            add(metric, "p50", f"{name} p50", "tok/s", True, values)
        for metric, name in REASONING_COUNTS.items():
            add(metric, None, name, "", False, [s.rates.get(metric) for s in series], judged=False)
    # Where the time went, as each engine timed it: rows only when some engine did; an engine
    # that did not says so in its cell.
    for metric, name in SPLIT_METRICS.items():
        notes = tuple(part_note(s.time_split, metric, s.engine_label or s.engine) for s in series)
        for stat in SPLIT_STATS:
            add(
                metric,
                stat,
                f"{name} {STAT_LABELS[stat]}",
                "s",
                False,
                # A rest never below 0: the split's lines above the table say why one reads 0.
                [shown(metric, _split_stat(s, metric, stat)) for s in series],
                notes=notes,
            )
    for metric, (name, unit) in THROUGHPUT_METRICS.items():
        add(metric, None, name, unit, True, [s.rates.get(metric) for s in series])
    for metric, name in QUALITY_METRICS.items():
        add(metric, None, name, "%", True, [s.rates.get(metric) for s in series])
    # A benchmark without a price keeps its cost row, reading "not priced" (never $0 or blank).
    benchmarks = any(s.kind == RunKind.BENCHMARK for s in series)
    for metric, name in COST_METRICS.items():
        keep = benchmarks and metric == "usd_per_1m_output"
        add(metric, None, name, "$", False, [s.rates.get(metric) for s in series], keep)
    for metric, (name, unit, higher) in ENERGY_METRICS.items():
        add(metric, None, name, unit, higher, [s.rates.get(metric) for s in series])
    add(
        "completed",
        None,
        "Completed requests",
        "",
        True,
        [float(s.completed) if s.completed is not None else None for s in series],
    )
    add(
        "failed",
        None,
        "Failed requests",
        "",
        False,
        [float(s.failed) if s.failed is not None else None for s in series],
    )
    error_rates = []
    for s in series:
        total = (s.completed or 0) + (s.failed or 0)
        error_rates.append((s.failed or 0) / total if total and s.failed is not None else None)
    add("error_rate", None, "Error rate", "%", False, error_rates)
    return rows


def _flatten(prefix: str, value: Any, out: dict[str, str], depth: int = 0) -> None:
    if isinstance(value, dict) and depth < 6:
        for key in sorted(value, key=str):
            _flatten(f"{prefix}.{key}" if prefix else str(key), value[key], out, depth + 1)
        return
    if isinstance(value, (dict, list)):
        text = json.dumps(value, sort_keys=True, default=str)
    else:
        text = "" if value is None else str(value)
    if len(text) > SETTING_VALUE_MAX_CHARS:
        text = text[: SETTING_VALUE_MAX_CHARS - 1] + "…"
    out[prefix] = text


def _settings(series: list[Series]) -> list[SettingRow]:
    """The engines' own settings side by side (version, flags, /props, /server_info, ...)."""
    flattened = []
    for item in series:
        out: dict[str, str] = {}
        snapshot = dict(item.engine_info)
        info = snapshot.pop("info", None)
        # What the engine said about itself when the run started (services/engines/reported.py).
        reported = snapshot.pop("reported", None)
        for key in ("name", "kind", "version", "model", "base_url"):
            if key in snapshot:
                _flatten(key, snapshot.pop(key), out)
        for key, value in snapshot.items():
            _flatten(key, value, out)
        if isinstance(info, dict):
            _flatten("", info, out)
        if isinstance(reported, dict):
            if "version" in reported and not out.get("version"):
                out["version"] = str(reported["version"])
            _flatten("", {k: v for k, v in reported.items() if k != "version"}, out)
        out.update(weights.weights_of(item.engine_info))
        for key in get_adapter(item.engine_info.get("kind")).volatile_settings:
            out.pop(key, None)
        flattened.append(out)
    order: list[str] = []
    for out in flattened:
        for key in out:
            if key not in order:
                order.append(key)
    head = [k for k in ("name", "kind", "version", "model", "base_url") if k in order]
    # The settings that explain a speed difference (the weights' format and dtype, batch
    # width, prefix cache...) before the rest (issue 47).
    rest = sorted((k for k in order if k not in head), key=lambda k: (weights.speed_rank(k), k))
    rows = []
    for key in head + rest:
        values = tuple(out.get(key) for out in flattened)
        if all(value in (None, "") for value in values):
            continue
        rows.append(SettingRow(key=key, values=values, differs=len(set(values)) > 1))
    return rows


def comparison_of_run(detail: RunDetail) -> Comparison | None:
    """The run's own engines side by side, or None when it holds no engine results (nothing
    measured yet, or every engine cancelled before its turn)."""
    if not detail.has_measurements:
        return None
    try:
        return compare_runs([detail.id])
    except ValidationError:
        return None


def compare_runs(
    run_ids: Sequence[int], baseline: str | int | None = None, *, allow_incomparable: bool = False
) -> Comparison:
    """Compare the engines of the given runs. `baseline` is a series key ("12:vllm"), a run
    id (its first engine) or None (the first series). Series that are not comparable with the
    baseline get no verdicts (no winner named) unless `allow_incomparable`, which the
    comparison then carries wherever it is shown or exported."""
    ids = list(dict.fromkeys(int(run_id) for run_id in run_ids))
    if not ids:
        raise ValidationError("Pick at least one run to compare.")
    if len(ids) > MAX_COMPARED_RUNS:
        raise ValidationError(f"Compare at most {MAX_COMPARED_RUNS} runs at once.")
    # Every surface with per-engine tables, verdicts or charts comes through here.
    blind.refuse(ids, "Comparing")
    with session_scope() as session:
        runs = {run.id: run for run in session.scalars(select(Run).where(Run.id.in_(ids)))}
        missing = [run_id for run_id in ids if run_id not in runs]
        if missing:
            raise NotFoundError(f"Run(s) {', '.join('#' + str(m) for m in missing)} do not exist.")
        ordered = [runs[run_id] for run_id in ids]
        samples = load_samples(session, ids)
        series = [item for run in ordered for item in build_series(run, samples)]
        attach_repeats(session, ordered, series)
    if not series:
        raise ValidationError("These runs hold no engine results to compare.")
    if len(ids) > 1 and len(series) < 2:
        raise ValidationError("These runs hold fewer than two engine results to compare.")
    index = 0
    if baseline is not None:
        keys = [s.key for s in series]
        text = str(baseline)
        if text in keys:
            index = keys.index(text)
        elif text.lstrip("#").isdigit() and int(text.lstrip("#")) in ids:
            index = next(i for i, s in enumerate(series) if s.run_id == int(text.lstrip("#")))
        else:
            raise ValidationError(
                f"Baseline {text!r} is not one of the compared series ({', '.join(keys)})."
            )
    report = comparability.report_of(
        [(s.key, s.label, s.fingerprint) for s in series], index, override=allow_incomparable
    )
    return Comparison(
        series=series,
        baseline=index,
        rows=_metric_rows(series, index),
        verdicts=verdicts_of(series) if len(series) > 1 and report.names_winners else [],
        settings=_settings(series),
        run_ids=tuple(ids),
        comparability=report,
        repeat_notes=not_repeat_notes(runs, series, index, report.verdicts),
    )
