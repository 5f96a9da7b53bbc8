"""Run.summary built from the stored records (the format is documented in docs/cli-formats.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from services.bench import comparability, findings, selfcheck
from services.bench.blocks import (
    EngineResultsJson,
    FlaggedLoad,
    GeneratorBlock,
    RunGeneratorBlock,
    SloSearchBlock,
    UncheckedLoad,
)
from services.bench.jobs.engine_metrics import engine_metrics_for
from services.bench.results import EngineResults
from services.bench.runner import BenchOutcome, StepResult
from services.bench.spec import BenchSpec
from services.bench.stats import RequestRecord, summarize_engine
from services.bench.summary import BenchSummary
from services.bench.time_split import add_rest_evidence, engine_queue, engine_said_waited
from services.bench.window_counts import with_window
from services.bench.workloads import TRACE_ATTRIBUTION, workload_label
from services.core import cost
from services.core.json_types import JsonOut
from services.telemetry.energy.maths import energy_per_token
from services.telemetry.energy.records import EnergyResult

StepKey = tuple[str, int | None]
StepsMeta = dict[StepKey, StepResult]


def build_summary(
    spec: BenchSpec,
    records: Sequence[RequestRecord],
    outcome: BenchOutcome | None,
    *,
    run_id: int | None = None,
) -> JsonOut:
    """Run.summary from the stored records (the source of truth), enriched with what the
    runner knew (unsupported options, early stops, SLO search) when it finished."""
    steps_meta: StepsMeta = {}
    if outcome is not None:
        for result in outcome.steps:
            steps_meta[(result.engine, result.step)] = result
    groups: dict[StepKey, list[RequestRecord]] = {}
    for record in records:
        groups.setdefault((record.engine, record.step), []).append(record)
    engine_order = [e.name for e in spec.engines]
    per_step = _step_blocks(spec, groups, steps_meta, run_id)
    warm = warmup_output_tokens(groups)
    for (engine, step), block in per_step.items():
        meta = steps_meta.get((engine, step))
        if meta is not None and meta.energy is not None:
            block["energy"] = energy_block(meta.energy, engine, step, per_step, warm)
    engines, rows = _engines_and_sweep(spec, per_step, steps_meta, outcome)
    for name in engine_order:
        if name not in engines:
            # Never started (a run cancelled before its turn): "not run", never 0 req/s.
            never = summarize_engine([], slo=spec.slo, percentiles=spec.percentiles)
            never["not_run"] = True
            engines[name] = EngineResults.from_json(never)
    traced = spec.workload.kind == "trace" or spec.workload.length_dist in ("conversation", "code")
    summary = BenchSummary(
        engines=engines,
        sweep=rows,
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
    summary[comparability.SUMMARY_KEY] = comparability.fingerprints_to_store(
        spec.to_dict(), BenchSummary.from_json(summary)
    )
    return summary


def _step_blocks(
    spec: BenchSpec,
    groups: dict[StepKey, list[RequestRecord]],
    steps_meta: StepsMeta,
    run_id: int | None,
) -> dict[StepKey, EngineResultsJson]:
    """Each engine's (each sweep step's) figures from its records, with the engine's own
    metrics over its window and what the runner knew of the load."""
    prices = {e.name: e.usd_per_hour for e in spec.engines}
    kinds = {e.name: e.kind for e in spec.engines}
    per_step: dict[StepKey, EngineResultsJson] = {}
    for key, group in groups.items():
        engine, step = key
        meta = steps_meta.get(key)
        window = (meta.outcome.wall_start, meta.outcome.wall_end) if meta else None
        metrics = None
        if run_id is not None and spec.record_engine_metrics and window and window[0]:
            metrics = engine_metrics_for(run_id, engine, window[0], window[1])
        if meta is not None and meta.counts is not None:
            metrics = with_window(metrics, meta.counts, kinds.get(engine), meta.outcome.model)
        block = summarize_engine(
            engine_queue(group, kinds.get(engine), engine_said_waited(metrics)),
            slo=spec.slo,
            percentiles=spec.percentiles,
            fixed_output=spec.workload.uses_fixed_output,
            engine_metrics=metrics,
        )
        # What the requests showed that the figures must not hide: refused counters, a
        # workload broken, identical answers (docs/measuring.md).
        block["findings"] = [found.to_json() for found in findings.findings_of(engine, group, step)]
        if meta is not None:
            ran = meta.outcome
            block["unsupported_options"] = ran.unsupported
            block["cancelled"] = ran.cancelled
            block["max_streams"] = ran.max_streams
            block["connections_ahead"] = ran.connections_ahead
            block["model"] = ran.model
            block["started_at_unix"] = ran.wall_start
            generator = block["generator"] = ran.generator or GeneratorBlock()
            results = EngineResults.from_json(block)
            selfcheck.weigh(generator, results)
            add_rest_evidence(generator, results.time_split)
        # The price the run started with, so later price edits leave this run's cost as it was.
        block["cost"] = cost.cost_of_block(prices.get(engine), dict(block)).to_json()
        per_step[key] = block
    return per_step


def _engines_and_sweep(
    spec: BenchSpec,
    per_step: dict[StepKey, EngineResultsJson],
    steps_meta: StepsMeta,
    outcome: BenchOutcome | None,
) -> tuple[dict[str, EngineResults], list[EngineResults]]:
    """Each engine's results (a sweep's: the step it is judged by, the SLO search's best or
    its highest throughput) and the sweep's rows, step by step."""
    engine_order = [e.name for e in spec.engines]
    engines: dict[str, EngineResults] = {}
    rows: list[EngineResults] = []
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
            place: JsonOut = {
                "engine": engine,
                "step": step,
                dimension: level,
                "phase": meta.phase if meta else "sweep",
            }
            rows.append(EngineResults.from_json({**place, **block}))
        for name in engine_order:
            candidates = [row for row in rows if row.engine == name]
            if not candidates:
                continue
            search = outcome.slo_search.get(name) if outcome is not None else None
            best_level = (search or SloSearchBlock()).get("best")
            if sweep.kind == "slo_search" and best_level:
                chosen = next(
                    (r for r in candidates if r.level(dimension) == best_level), candidates[-1]
                )
            else:
                chosen = max(candidates, key=lambda r: r.request_throughput_rps or 0.0)
            reported = {k: v for k, v in chosen.to_json().items() if k not in ("engine", "phase")}
            engines[name] = EngineResults.from_json({**reported, "from_step": chosen.step})
    else:
        for name in engine_order:
            if (name, None) in per_step:
                engines[name] = EngineResults.from_json(per_step[(name, None)])
    return engines, rows


def energy_block(
    energy: EnergyResult,
    engine: str,
    step: int | None,
    per_step: dict[tuple[str, int | None], EngineResultsJson],
    warmup_tokens: dict[tuple[str, int | None], int] | None = None,
) -> JsonOut:
    """A step's energy with its per-token figures, the one definition every path reads: the
    joules of the step's window over the output tokens of every request in that window, the
    measured ones and the warm-up's (the window spans the warm-up and connecting ahead: their
    energy is in it, so their tokens count too), of every engine the joules cover (engines run
    together share one window and one figure). The stored block says which tokens it counted."""
    if not energy.measured:
        return energy.to_json()
    names = energy.engines or (engine,)
    measured = sum(_output_tokens(per_step.get((name, step))) for name in names)
    warm = sum((warmup_tokens or {}).get((name, step), 0) for name in names)
    per_token = energy_per_token(energy.joules, measured + warm)
    return replace(
        energy,
        j_per_output_token=per_token.j_per_output_token,
        output_tokens_per_j=per_token.output_tokens_per_j,
        output_tokens=measured + warm,
        warmup_output_tokens=warm,
    ).to_json()


def _output_tokens(block: EngineResultsJson | None) -> int:
    return int(block.get("output_tokens") or 0) if block is not None else 0


def warmup_output_tokens(
    groups: dict[tuple[str, int | None], list[RequestRecord]],
) -> dict[tuple[str, int | None], int]:
    """Each (engine, step)'s warm-up output tokens (its completed warm-up requests')."""
    return {
        key: sum(r.output_tokens or 0 for r in group if r.warmup and r.ok)
        for key, group in groups.items()
    }


def generator_verdict(
    per_step: dict[tuple[str, int | None], EngineResultsJson],
) -> RunGeneratorBlock:
    """The run's self-check in one place: client-bound when any engine or step was, with
    the evidence of each (engine, step) that was; `checked` false when any could not be
    checked, with the reason of each in `unchecked` (not flagged is not "kept up")."""
    flagged: list[FlaggedLoad] = []
    unchecked: list[UncheckedLoad] = []
    for (engine, step), block in per_step.items():
        check = block.get("generator") or GeneratorBlock()
        verdict = selfcheck.state(check)
        if verdict == selfcheck.CLIENT_BOUND:
            flagged.append(FlaggedLoad(engine=engine, step=step, evidence=check.get("evidence", [])))
        elif verdict == selfcheck.UNCHECKED:
            unchecked.append(
                UncheckedLoad(engine=engine, step=step, reason=selfcheck.unchecked_reason(check))
            )
    checked = sum(
        1 for block in per_step.values() if (block.get("generator") or GeneratorBlock()).get("workers")
    )
    return RunGeneratorBlock(
        client_bound=bool(flagged),
        checked=not unchecked,
        flagged=flagged,
        unchecked=unchecked,
        checked_loads=checked,
    )
