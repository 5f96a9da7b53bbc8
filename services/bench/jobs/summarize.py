"""Run.summary built from the stored records (the format is documented in docs/cli-formats.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from services.bench import comparability, findings, selfcheck
from services.bench.jobs.engine_metrics import engine_metrics_for
from services.bench.results import EngineResults
from services.bench.runner import BenchOutcome, StepResult
from services.bench.spec import BenchSpec
from services.bench.stats import RequestRecord, summarize_engine
from services.bench.summary import BenchSummary
from services.bench.time_split import add_rest_evidence, engine_queue, engine_said_waited
from services.bench.workloads import TRACE_ATTRIBUTION, workload_label
from services.core import cost
from services.telemetry.energy.maths import energy_per_token
from services.telemetry.energy.records import EnergyResult


def build_summary(
    spec: BenchSpec,
    records: Sequence[RequestRecord],
    outcome: BenchOutcome | None,
    *,
    run_id: int | None = None,
) -> dict[str, Any]:
    """Run.summary from the stored records (the source of truth), enriched with what the
    runner knew (unsupported options, early stops, SLO search) when it finished."""
    steps_meta: dict[tuple[str, int | None], StepResult] = {}
    if outcome is not None:
        for result in outcome.steps:
            steps_meta[(result.engine, result.step)] = result
    groups: dict[tuple[str, int | None], list[RequestRecord]] = {}
    for record in records:
        groups.setdefault((record.engine, record.step), []).append(record)
    engine_order = [e.name for e in spec.engines]
    prices = {e.name: e.usd_per_hour for e in spec.engines}
    kinds = {e.name: e.kind for e in spec.engines}
    per_step: dict[tuple[str, int | None], dict[str, Any]] = {}
    for key, group in groups.items():
        engine, step = key
        meta = steps_meta.get(key)
        window = (meta.outcome.wall_start, meta.outcome.wall_end) if meta else None
        metrics = None
        if run_id is not None and spec.record_engine_metrics and window and window[0]:
            metrics = engine_metrics_for(run_id, engine, window[0], window[1])
        block = summarize_engine(
            engine_queue(group, kinds.get(engine), engine_said_waited(metrics)),
            slo=spec.slo,
            percentiles=spec.percentiles,
            fixed_output=spec.workload.uses_fixed_output,
            engine_metrics=metrics,
        )
        # What the requests showed that the figures must not hide: refused counters, a
        # workload broken, identical answers (docs/measuring.md).
        block[findings.SUMMARY_KEY] = [
            found.to_json() for found in findings.findings_of(engine, group, step)
        ]
        if meta is not None:
            block["unsupported_options"] = meta.summary.get("unsupported_options", [])
            block["cancelled"] = meta.summary.get("cancelled", False)
            block["max_streams"] = meta.summary.get("max_streams")
            block["connections_ahead"] = meta.summary.get("connections_ahead")
            block["model"] = meta.summary.get("model")
            block["started_at_unix"] = meta.summary.get("started_at_unix")
            block["generator"] = meta.summary.get("generator") or {}
            selfcheck.weigh(block["generator"], EngineResults.from_json(block))
            add_rest_evidence(block)
        # The price the run started with, so later price edits leave this run's cost as it was.
        block[cost.SUMMARY_KEY] = cost.cost_of_block(prices.get(engine), block).to_json()
        per_step[key] = block
    warm = warmup_output_tokens(groups)
    for (engine, step), block in per_step.items():
        meta = steps_meta.get((engine, step))
        if meta is not None and meta.energy is not None:
            block["energy"] = energy_block(meta.energy, engine, step, per_step, warm)
    engines: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    sweep = spec.sweep
    if sweep.active:
        dimension = sweep.dimension
        for (engine, step), block in sorted(
            per_step.items(),
            key=lambda item: (
                item[0][1] or 0,
                engine_order.index(item[0][0]) if item[0][0] in engine_order else 99,
            ),
        ):
            meta = steps_meta.get((engine, step))
            level = meta.level if meta else None
            rows.append(
                {
                    "engine": engine,
                    "step": step,
                    dimension: level,
                    "phase": meta.phase if meta else "sweep",
                    **block,
                }
            )
        for name in engine_order:
            candidates = [row for row in rows if row["engine"] == name]
            if not candidates:
                continue
            if (
                sweep.kind == "slo_search"
                and outcome is not None
                and outcome.slo_search.get(name, {}).get("best")
            ):
                best_level = outcome.slo_search[name]["best"]
                chosen = next((r for r in candidates if r.get(dimension) == best_level), candidates[-1])
            else:
                chosen = max(candidates, key=lambda r: r.get("request_throughput_rps") or 0.0)
            engines[name] = {
                **{k: v for k, v in chosen.items() if k not in ("engine", "phase")},
                "from_step": chosen.get("step"),
            }
    else:
        for name in engine_order:
            if (name, None) in per_step:
                engines[name] = per_step[(name, None)]
    for name in engine_order:
        if name not in engines:
            # Never started (a run cancelled before its turn): "not run", never 0 req/s.
            engines[name] = {
                **summarize_engine([], slo=spec.slo, percentiles=spec.percentiles),
                "not_run": True,
            }
    traced = spec.workload.kind == "trace" or spec.workload.length_dist in ("conversation", "code")
    summary = BenchSummary(
        engines={name: EngineResults.from_json(block) for name, block in engines.items()},
        sweep=[EngineResults.from_json(row) for row in rows],
        slo_search=dict(outcome.slo_search) if outcome is not None else {},
        stopped_early=dict(outcome.stopped_early) if outcome is not None else {},
        prompt_calibration=outcome.calibration.to_dict()
        if outcome is not None and outcome.calibration is not None
        else {},
        models=outcome.models if outcome is not None else None,
        load=spec.load.label(),
        workload=workload_label(spec.workload),
        percentiles=list(spec.percentiles),
        # Connections are opened ahead (as many as the concurrency) unless asked otherwise, so
        # TTFT excludes connecting, except for requests beyond them (an uncapped open loop).
        ttft_includes_connect=not spec.connect_ahead,
        ttft_includes_reasoning=any(block.get("ttft_includes_reasoning") for block in per_step.values()),
        slo=spec.slo.label() if spec.slo.active else None,
        data_attribution=TRACE_ATTRIBUTION if traced else None,
        engines_run="together" if spec.parallel_engines else "one after another",
        generator=generator_verdict(per_step),
    ).to_json()
    # What makes these figures comparable, fixed now: later readers need not re-derive it.
    summary[comparability.SUMMARY_KEY] = comparability.fingerprints_to_store(spec.to_dict(), summary)
    return summary


def energy_block(
    energy: EnergyResult,
    engine: str,
    step: int | None,
    per_step: dict[tuple[str, int | None], dict[str, Any]],
    warmup_tokens: dict[tuple[str, int | None], int] | None = None,
) -> dict[str, Any]:
    """A step's energy with its per-token figures, the one definition every path reads: the
    joules of the step's window over the output tokens of every request in that window, the
    measured ones and the warm-up's (the window spans the warm-up and connecting ahead: their
    energy is in it, so their tokens count too), of every engine the joules cover (engines run
    together share one window and one figure). The stored block says which tokens it counted."""
    if not energy.measured:
        return energy.to_json()
    names = energy.engines or (engine,)
    measured = sum(int((per_step.get((name, step)) or {}).get("output_tokens") or 0) for name in names)
    warm = sum((warmup_tokens or {}).get((name, step), 0) for name in names)
    per_token = energy_per_token(energy.joules, measured + warm)
    return replace(
        energy,
        j_per_output_token=per_token.j_per_output_token,
        output_tokens_per_j=per_token.output_tokens_per_j,
        output_tokens=measured + warm,
        warmup_output_tokens=warm,
    ).to_json()


def warmup_output_tokens(
    groups: dict[tuple[str, int | None], list[RequestRecord]],
) -> dict[tuple[str, int | None], int]:
    """Each (engine, step)'s warm-up output tokens (its completed warm-up requests')."""
    return {
        key: sum(r.output_tokens or 0 for r in group if r.warmup and r.ok)
        for key, group in groups.items()
    }


def generator_verdict(per_step: dict[tuple[str, int | None], dict[str, Any]]) -> dict[str, Any]:
    """The run's self-check in one place: client-bound when any engine or step was, with
    the evidence of each (engine, step) that was; `checked` false when any could not be
    checked, with the reason of each in `unchecked` (not flagged is not "kept up")."""
    flagged, unchecked = [], []
    for (engine, step), block in per_step.items():
        check = block.get("generator") or {}
        verdict = selfcheck.state(check)
        if verdict == selfcheck.CLIENT_BOUND:
            flagged.append({"engine": engine, "step": step, "evidence": check.get("evidence", [])})
        elif verdict == selfcheck.UNCHECKED:
            unchecked.append(
                {"engine": engine, "step": step, "reason": selfcheck.unchecked_reason(check)}
            )
    checked = sum(1 for block in per_step.values() if (block.get("generator") or {}).get("workers"))
    return {
        "client_bound": bool(flagged),
        "checked": not unchecked,
        "flagged": flagged,
        "unchecked": unchecked,
        "checked_loads": checked,
    }
