"""A compared run's engines as series: stored summaries, per-request samples and repeated runs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
from sqlalchemy import Text, and_, cast, func, literal, select
from sqlalchemy.orm import Session

from db.models import Exchange, RequestResult, Run
from services.bench.comparability import run_fingerprint
from services.bench.results import EngineResults
from services.bench.spec import slo_of
from services.bench.stats import SloSpec, within_slo
from services.bench.summary import BenchSummary
from services.core import cost, stored_json, units
from services.core.measure import describe
from services.engines import get_adapter
from services.runs.records import (
    ANSWER_METRICS,
    COST_METRICS,
    ENERGY_METRICS,
    LATENCY_METRICS,
    MAX_REPEATS,
    MAX_SAMPLES_PER_SERIES,
    QUALITY_METRICS,
    REASONING_COUNTS,
    REASONING_RATES,
    STATS,
    THROUGHPUT_METRICS,
    Series,
    split_engine_names,
)
from services.runstate.lifecycle import FINISHED_STATUSES
from services.runstate.stored import StoredEngine, engines_by_name


def _engine_identity(snapshot: StoredEngine | None) -> tuple[object, ...]:
    """What must match for two runs of an engine to count as repeats: a new engine version
    or another model is a change to measure, not noise."""
    snapshot = snapshot or StoredEngine()
    reported = stored_json.mapping(snapshot.get("reported"))
    return (
        snapshot.get("kind"),
        snapshot.get("model"),
        snapshot.get("version") or reported.get("version"),
    )


def _engine_label(snapshot: StoredEngine | None, config: Any, name: str) -> str:
    """The engine's kind in words, from its snapshot or the run's spec; its name when neither
    says (an import)."""
    kind = (snapshot or StoredEngine()).get("kind")
    engines = stored_json.mapping(config).get("engines")
    for spec in engines if isinstance(engines, list) and not kind else []:
        if isinstance(spec, dict) and spec.get("name") == name:
            kind = spec.get("kind")
    return get_adapter(str(kind)).label if kind else name


@dataclass
class _Bucket:
    """One (run, engine)'s rows as they are read: each latency's values, each request's rate
    row (e2e, output tokens, input tokens, met the SLOs), and the counts."""

    latencies: dict[str, list[object]] = field(
        default_factory=lambda: {metric: [] for metric in LATENCY_METRICS}
    )
    rates: list[tuple[float, float, float, float]] = field(default_factory=list)
    ok: int = 0
    failed: int = 0
    sampled_every: int = 1


@dataclass(frozen=True)
class Samples:
    """One (run, engine)'s measured requests: each latency's finite values (seconds; ITL every
    gap), the rate rows (N x 4: e2e, output tokens, input tokens, met the SLOs), the counts of
    every request, and k when the values hold every k-th request."""

    latencies: dict[str, np.ndarray]
    rates: np.ndarray
    ok: int
    failed: int
    sampled_every: int = 1


def load_samples(session: Session, run_ids: Sequence[int]) -> dict[tuple[int, str], Samples]:
    """Per (run, engine): latency arrays of successful measured requests, and counts.

    Counts cover every request; the latency arrays hold every request up to
    MAX_SAMPLES_PER_SERIES and an evenly spaced subset (every k-th request) beyond, which
    draws the same CDF and keeps a comparison of million-request runs fast."""
    collected: dict[tuple[int, str], _Bucket] = {}
    measured = and_(RequestResult.run_id.in_(run_ids), RequestResult.warmup.is_(False))
    counts = session.execute(
        select(RequestResult.run_id, RequestResult.engine_name, RequestResult.ok, func.count())
        .where(measured)
        .group_by(RequestResult.run_id, RequestResult.engine_name, RequestResult.ok)
    ).all()
    for run_id, engine, ok, count in counts:
        bucket = collected.setdefault((run_id, engine), _Bucket())
        if ok:
            bucket.ok += int(count)
        else:
            bucket.failed += int(count)
    slos = {
        run_id: slo_of(config if isinstance(config, dict) else {})
        for run_id, config in session.execute(select(Run.id, Run.config).where(Run.id.in_(run_ids)))
    }
    for (run_id, engine), bucket in collected.items():
        every = max(1, math.ceil(bucket.ok / MAX_SAMPLES_PER_SERIES))
        bucket.sampled_every = every
        slo = slos.get(run_id, SloSpec())
        query = select(
            RequestResult.ttft_s,
            RequestResult.tpot_s,
            RequestResult.e2e_s,
            # Raw JSON text: most rows hold "[]", and decoding a million of them costs seconds.
            cast(RequestResult.itl_s, Text),
            RequestResult.output_tokens,
            RequestResult.input_tokens,
            # The time to the first answer token lives in `extra`: read only where an SLO needs it.
            RequestResult.extra if slo.ttfat_ms is not None else literal(None),
        ).where(
            RequestResult.run_id == run_id,
            RequestResult.engine_name == engine,
            RequestResult.warmup.is_(False),
            RequestResult.ok.is_(True),
        )
        if every > 1:
            query = query.where(RequestResult.index % every == 0)
        # In the order they were sent: the gate replays a closed loop's requests in it.
        query = query.order_by(RequestResult.index)
        for ttft, tpot, e2e, itl_text, output_tokens, input_tokens, extra in session.execute(query):
            if e2e is not None and e2e > 0 and output_tokens is not None:
                # Each request's time and tokens, side by side, and whether it met the run's
                # SLOs: the gate's within-run interval of a rate (services/runs/gate/noise.py).
                ttfat = units.number(extra.get("ttfat_s")) if isinstance(extra, dict) else None
                met = within_slo(slo, ttft, tpot, e2e, ttfat)
                bucket.rates.append((e2e, output_tokens, input_tokens or 0, float(met)))
            if ttft is not None:
                bucket.latencies["ttft_s"].append(ttft)
            if tpot is not None:
                bucket.latencies["tpot_s"].append(tpot)
            if e2e is not None:
                bucket.latencies["e2e_s"].append(e2e)
            if itl_text and itl_text != "[]":
                gaps = orjson.loads(itl_text)
                if isinstance(gaps, list):
                    bucket.latencies["itl_s"].extend(gaps)
    loaded_runs = {run_id for run_id, _ in collected}
    missing = [run_id for run_id in run_ids if run_id not in loaded_runs]
    if missing:
        # Playground runs keep their timings on the exchanges, not in request rows.
        for run_id, engine, status, metrics in session.execute(
            select(Exchange.run_id, Exchange.engine_name, Exchange.status, Exchange.metrics).where(
                Exchange.run_id.in_(missing)
            )
        ):
            bucket = collected.setdefault((run_id, engine), _Bucket())
            if status in ("error", "failed", "cancelled"):
                bucket.failed += 1
                continue
            bucket.ok += 1
            metrics = metrics or {}
            for metric in ("ttft_s", "tpot_s", "e2e_s"):
                value = units.number(metrics.get(metric))
                if value is not None:
                    bucket.latencies[metric].append(value)
            if isinstance(metrics.get("itl_s"), list):
                bucket.latencies["itl_s"].extend(
                    v for v in metrics["itl_s"] if units.number(v) is not None
                )
    result = {}
    for key, bucket in collected.items():
        arrays = {}
        for metric in LATENCY_METRICS:
            raw = bucket.latencies[metric]
            try:
                values = np.asarray(raw, dtype=float)  # None becomes NaN, dropped next
            except (TypeError, ValueError):  # a stray string in a hand-edited row
                values = np.asarray([units.number(v) for v in raw], dtype=float)
            arrays[metric] = values[np.isfinite(values)]
        rates = np.asarray(bucket.rates, dtype=float).reshape(-1, 4)
        result[key] = Samples(
            latencies=arrays,
            rates=rates[np.isfinite(rates).all(axis=1)],
            ok=bucket.ok,
            failed=bucket.failed,
            sampled_every=bucket.sampled_every,
        )
    return result


def stored_energy(numbers: EngineResults) -> dict[str, float]:
    """A block's energy figures (ENERGY_METRICS) as the run stored them, only where measured:
    a step with a reason has no figure, never 0 J (and so no change from 0 for the gate)."""
    energy = numbers.energy
    if not energy or not energy.get("measured"):
        return {}
    return {m: v for m in ENERGY_METRICS if (v := units.number(energy.get(m))) is not None}


def _summary_stats(numbers: EngineResults) -> dict[str, dict[str, float]]:
    stats: dict[str, dict[str, float]] = {}
    for metric in (*LATENCY_METRICS, *ANSWER_METRICS, *REASONING_RATES):
        block = numbers.latency(metric)
        if block is not None:
            values = {stat: v for stat in (*STATS, "std") if (v := block.at(stat)) is not None}
            if values:
                stats[metric] = values
    return stats


#: The figures a comparison lists by name (THROUGHPUT_METRICS, REASONING_COUNTS), each read
#: from its field.
_FIGURES: dict[str, Callable[[EngineResults], float | None]] = {
    "request_throughput_rps": lambda block: block.request_throughput_rps,
    "output_throughput_tok_s": lambda block: block.output_throughput_tok_s,
    "total_token_throughput_tok_s": lambda block: block.total_token_throughput_tok_s,
    "goodput_rps": lambda block: block.goodput_rps,
    "reasoning_tokens": lambda block: block.reasoning_tokens,
    "answer_tokens": lambda block: block.answer_tokens,
}


def _costs(priced: cost.Cost) -> dict[str, float | None]:
    """A step's cost figures (COST_METRICS), each read from its field."""
    figures = {
        "usd_per_1m_output": priced.usd_per_1m_output,
        "usd_per_1m_total": priced.usd_per_1m_total,
        "usd_per_1m_output_goodput": priced.usd_per_1m_output_goodput,
    }
    return {metric: figures[metric] for metric in COST_METRICS}


def _figure(numbers: EngineResults, metric: str) -> float | None:
    """A figure the comparison lists by name; a parity run's answer quality (QUALITY_METRICS)
    is no engine result but its own block's, kept beside them (`extra`)."""
    read = _FIGURES.get(metric)
    return read(numbers) if read is not None else units.number(numbers.extra.get(metric))


def build_series(run: Run, samples: dict[tuple[int, str], Samples]) -> list[Series]:
    summary = BenchSummary.from_json(run.summary)
    engine_summaries = summary.engines
    names: list[str] = list(engine_summaries)
    for name in split_engine_names(run.engine_names):
        if name not in names:
            names.append(name)
    for run_id, engine in samples:
        if run_id == run.id and engine not in names:
            names.append(engine)
    snapshots = engines_by_name(run.engines)
    steps = summary.sweep
    client_bound = summary.client_bound_engines()
    result = []
    for name in names:
        stored = engine_summaries.get(name)
        numbers = stored or EngineResults()
        sampled = samples.get((run.id, name))
        if numbers.not_run and sampled is None:
            continue  # cancelled before its turn: nothing to compare (not "0 req/s, -100%")
        stats = _summary_stats(numbers)
        for metric in LATENCY_METRICS:
            values = sampled.latencies.get(metric) if sampled is not None else None
            if values is not None and values.size:
                computed = {stat: v for stat, v in describe(values).items() if v is not None}
                # The stored summary wins; the rows fill what it lacks.
                stats[metric] = {**computed, **stats.get(metric, {})}
        rates = {
            metric: v
            for metric in (*THROUGHPUT_METRICS, *QUALITY_METRICS, *REASONING_COUNTS)
            if (v := _figure(numbers, metric)) is not None
        }
        # The cost the run stored with its price (never recomputed from today's price).
        priced = cost.Cost.from_json(numbers.cost)
        rates.update({metric: v for metric, v in _costs(priced).items() if v is not None})
        rates.update(stored_energy(numbers))
        # No block (a Playground run's engine): its counts are its rows', never 0.
        completed = float(stored.completed) if stored is not None else None
        failed = float(stored.failed) if stored is not None else None
        if completed is None and sampled is not None:
            completed = float(sampled.ok)
        if failed is None and sampled is not None:
            failed = float(sampled.failed)
        result.append(
            Series(
                run_id=run.id,
                engine=name,
                label=f"#{run.id} {name}",
                run_name=run.name or run.kind,
                kind=run.kind,
                created_at=run.created_at,
                model=(snapshots.get(name) or StoredEngine()).get("model") or run.model,
                workload=run.workload,
                stats=stats,
                rates=rates,
                completed=int(completed) if completed is not None else None,
                failed=int(failed) if failed is not None else None,
                samples=dict(sampled.latencies) if sampled is not None else {},
                request_rates=sampled.rates if sampled is not None else None,
                closed_loop_slots=_closed_loop_slots(run.config),
                sampled_every=sampled.sampled_every if sampled is not None else 1,
                sweep=[step for step in steps if (step.engine or name) == name],
                engine_info=snapshots.get(name) or StoredEngine(name=name),
                ttft_includes_reasoning=numbers.ttft_includes_reasoning is True,
                fingerprint=run_fingerprint(run.config, run.summary, run.engines, name),
                time_split=numbers.time_split,
                engine_label=_engine_label(snapshots.get(name), run.config, name),
                results=stored,
                client_bound=name in client_bound,
                ran_together=summary.engines_run == "together",
            )
        )
    return result


def _closed_loop_slots(config: Any) -> int | None:
    load = stored_json.mapping(stored_json.mapping(config).get("load"))
    slots = load.get("concurrency")
    if load.get("mode") != "concurrency" or not isinstance(slots, int) or slots < 1:
        return None
    return slots


def _had_failures(numbers: EngineResults) -> bool:
    """A stored run of the setup whose requests failed (an engine that restarted mid-run, a
    full disk) is not a repeat: its lower rates would widen the noise and hide a regression.
    The run being judged keeps its place: its failures have the gate's error check."""
    return numbers.failed > 0 or not numbers.completed


def attach_repeats(session: Session, runs: Sequence[Run], series: list[Series]) -> None:
    """Give each series the values its metrics took in repeated runs of the same setup."""
    fingerprints = {run.config_fingerprint for run in runs if run.config_fingerprint}
    if not fingerprints:
        return
    candidates = session.execute(
        select(Run.id, Run.config_fingerprint, Run.summary, Run.engines, Run.created_at)
        .where(Run.config_fingerprint.in_(fingerprints), Run.status.in_(FINISHED_STATUSES))
        .order_by(Run.created_at.desc())
        .limit(MAX_REPEATS * len(fingerprints))
    ).all()
    by_run = {run.id: run for run in runs}
    for item in series:
        run = by_run[item.run_id]
        identity = _engine_identity(item.engine_info)
        repeat_ids: list[int] = []
        values: dict[str, list[float]] = {}
        value_runs: dict[str, list[int]] = {}
        for candidate in candidates:
            if candidate.config_fingerprint != run.config_fingerprint:
                continue
            numbers = BenchSummary.from_json(candidate.summary).engine(item.engine)
            if numbers is None:
                continue
            snapshot = engines_by_name(candidate.engines).get(item.engine)
            if candidate.id != run.id and (
                _engine_identity(snapshot) != identity or _had_failures(numbers)
            ):
                continue
            repeat_ids.append(candidate.id)
            found = [
                (f"{metric}.{stat}", value)
                for metric, block in _summary_stats(numbers).items()
                for stat, value in block.items()
            ]
            found += [
                (metric, rate)
                for metric in THROUGHPUT_METRICS
                if (rate := _figure(numbers, metric)) is not None
            ]
            # Energy varies from run to run too: its repeats judge the gate's energy checks.
            found += list(stored_energy(numbers).items())
            for key, value in found:
                values.setdefault(key, []).append(value)
                value_runs.setdefault(key, []).append(candidate.id)
        if len(repeat_ids) >= 2:
            item.repeat_run_ids = tuple(sorted(repeat_ids))
            item.repeat_values = values
            item.repeat_value_runs = value_runs
