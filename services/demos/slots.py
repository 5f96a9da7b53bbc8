"""Scenario 8: how many slots for this machine (a tuning run, guided).

llama.cpp serves `-np N` requests at once from one set of weights. More slots share each decode
step among more streams, which pays while the machine has compute to spare and costs latency once
it has not. The demo starts llama.cpp once per slot count on a free port (services/tune, the
same tuning run as the Tune page and `shootout tune`, stored as its own run), sends the same
closed-loop load to each, and concludes from the measured throughput and p90 TTFT.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from services.bench.arrivals import LoadSpec
from services.bench.workloads import WorkloadSpec
from services.core import stored_json, units
from services.core.measure import milliseconds
from services.core.stored_json import stored
from services.demos.base import (
    Conclusion,
    DemoVerdict,
    OptionSpec,
    Scenario,
    StepOutcome,
    StepPlan,
    engine_data,
)
from services.demos.context import DemoContext, DemoStopped
from services.demos.readout import BigNumber, ChartSpec, Series, SlotRow
from services.demos.summary import StepBlock
from services.engines.endpoints import EngineRecord
from services.tune import jobs as tune_jobs
from services.tune.spec import TuneSpec
from services.tune.summary import TuneConfigEntry, TunedConfig, TuneSummary

#: A slot count "pays" when it brings at least this much more throughput than the one before.
WORTH_IT = 1.10


def measured(configs: Sequence[TuneConfigEntry]) -> list[SlotRow]:
    """Slot count, output tokens/s and p90 TTFT of each configuration that ran."""
    rows: list[SlotRow] = []
    for config in configs:
        results = TunedConfig.from_json(config).metrics
        slots = int(config.get("settings", {}).get("np", 0) or 0)
        ttft = results.ttft_s if results is not None else None
        rows.append(
            {
                "slots": slots,
                "label": config["label"],
                "status": config["status"],
                "tok_s": results.output_throughput_tok_s
                if results is not None and results.completed
                else None,
                "ttft_p90_ms": units.to_ms(ttft.p90 if ttft is not None else None),
                "reason": config.get("reason"),
            }
        )
    return rows


def _tok_s(row: SlotRow) -> float:
    """The throughput of a row that has one."""
    return row["tok_s"] or 0.0


class SlotsOptions(TypedDict):
    slots: list[int]
    concurrency: int
    requests: int
    output_tokens: int


@dataclass(frozen=True)
class SlotsVerdict(DemoVerdict):
    """One slot count (the conclusion's verdicts are keyed by it): its throughput, its p90
    TTFT, and whether it is the count the demo recommends."""

    tok_s: float | None = stored(stored_json.number, default=None)
    ttft_p90_ms: float | None = stored(stored_json.number, default=None)
    best: bool = stored(stored_json.flag, default=False)


class HowManySlots(Scenario[SlotsOptions]):
    name = "how-many-slots"
    title = "How many slots for this machine"
    mechanism = "continuous batching against the machine's compute"
    explanation = (
        "llama.cpp decodes every active slot in one batched step. With spare compute, a second or fourth slot "
        "serves more streams for nearly free; once the cores are busy, each extra slot only splits the same "
        "throughput more ways and every request waits longer. We start llama.cpp with each slot count, send "
        "the same load, and see where throughput stops growing."
    )
    default_engines = ("llamacpp-4slot",)
    min_engines = 1
    duration_hint = "about a minute per slot count on the local CPU engines"
    verdict_record = SlotsVerdict
    options = (
        OptionSpec(
            "slots", "Slot counts (-np)", [1, 2, 4], "int_list", "Each starts llama.cpp once.", 1, 16
        ),
        OptionSpec("concurrency", "Requests at once", 4, "int", "The same for every slot count.", 1, 64),
        OptionSpec("requests", "Requests per slot count", 8, "int", "", 2, 200),
        OptionSpec("output_tokens", "Answer tokens", 32, "int", "", 4, 512),
    )

    def plan(self, engines: Sequence[EngineRecord], options: SlotsOptions) -> list[StepPlan]:
        slots = ", ".join(str(s) for s in options["slots"])
        return [
            StepPlan(
                "slots",
                f"llama.cpp with {slots} slots, the same load on each",
                f"{options['requests']} requests, {options['concurrency']} at once, "
                f"{options['output_tokens']} tokens each; one llama-server per slot count on a free port.",
                lambda ctx: self._run(ctx, options),
            )
        ]

    def _run(self, ctx: DemoContext, options: SlotsOptions) -> StepOutcome:
        spec = TuneSpec(
            kind="llamacpp",
            grid={"np": tuple(str(s) for s in options["slots"])},
            workload=WorkloadSpec(input_len=64, output_len=int(options["output_tokens"])),
            load=LoadSpec(
                mode="concurrency",
                concurrency=int(options["concurrency"]),
                requests=int(options["requests"]),
            ),
            name="Demo: how many slots for this machine",
        ).validate(trusted=False)
        # Typed slot counts only (no raw flags, no command templates): the demo's engines are the
        # local llama.cpp on free loopback ports, stopped when each configuration ends.
        run_id = tune_jobs.create_run(spec, trusted=False)
        outcome = StepOutcome()

        def progress(_config: object) -> None:
            nonlocal outcome
            outcome = self._outcome(run_id, tune_jobs.get_run(run_id).configs)
            ctx.publish(outcome)

        summary = tune_jobs.execute_run(run_id, should_stop=ctx.stop_requested, on_progress=progress)
        ctx.check_stop()
        configs = TuneSummary.from_json(summary).configs
        if configs:
            outcome = self._outcome(run_id, configs)
        if not any(row["tok_s"] for row in outcome.data.get("rows", [])):
            raise (
                DemoStopped()
                if ctx.stop_requested()
                else RuntimeError(
                    "No slot count ran: "
                    + "; ".join(
                        f"{r['label']}: {r['reason'] or r['status']}"
                        for r in outcome.data.get("rows", [])
                    )
                )
            )
        return outcome

    def _outcome(self, run_id: int, configs: Sequence[TuneConfigEntry]) -> StepOutcome:
        rows = measured(configs)
        labels = [f"{r['slots']} slot{'s' if r['slots'] != 1 else ''}" for r in rows]
        chart = ChartSpec(
            title="Throughput by slot count (the same load)",
            x_title="llama.cpp -np",
            y_title="output tokens/s",
            series=[
                Series(
                    "output tokens/s",
                    labels,
                    [r["tok_s"] for r in rows],
                    [units.rate(r["tok_s"]) for r in rows],
                )
            ],
        )
        numbers = [
            BigNumber(f"{label} · throughput", units.rate(r["tok_s"]), r["tok_s"])
            for label, r in zip(labels, rows)
        ]
        numbers += [
            BigNumber(
                f"{label} · p90 TTFT",
                units.duration_ms(r["ttft_p90_ms"]),
                # In seconds, as every time's value: the page puts a step's times in one unit.
                milliseconds(r["ttft_p90_ms"]),
            )
            for label, r in zip(labels, rows)
        ]
        errors = [
            f"{r['label']}: {r['reason'] or r['status']}"
            for r in rows
            if r["status"] not in ("finished", "pending", "starting", "running")
        ]
        finding = "; ".join(
            f"{label}: {units.rate(r['tok_s'])}" for label, r in zip(labels, rows) if r["tok_s"]
        )
        return StepOutcome(
            numbers,
            chart,
            (finding + ".") if finding else "",
            {"rows": rows, "tune_run": run_id},
            errors,
        )

    def conclude(
        self, steps: Sequence[StepBlock], engines: Sequence[str], options: SlotsOptions
    ) -> Conclusion:
        data = engine_data(steps, "slots")
        rows = [r for r in data.get("rows", []) if r.get("tok_s")]
        run = data.get("tune_run")
        if not rows:
            return Conclusion("No slot count was measured, so there is nothing to conclude.", [], {})
        rows.sort(key=lambda r: r["slots"])
        best, base = rows[0], rows[0]
        for previous, row in itertools.pairwise(rows):
            if _tok_s(row) >= _tok_s(previous) * WORTH_IT:
                best = row
            else:
                break
        gain = _tok_s(best) / _tok_s(base)
        lines = [
            f"{r['slots']} slot(s): {units.rate(r['tok_s'])}, p90 TTFT "
            f"{units.duration_ms(r['ttft_p90_ms'])}."
            for r in rows
        ]
        following = next((r for r in rows if r["slots"] > best["slots"]), None)
        beyond = ""
        if following is not None:
            beyond = (
                f" {following['slots']} slots gave {_tok_s(following) / _tok_s(best) - 1:+.0%} throughput"
                + (
                    f", p90 TTFT {units.duration_ms(best['ttft_p90_ms'])} to "
                    f"{units.duration_ms(following['ttft_p90_ms'])}"
                    if best["ttft_p90_ms"] is not None and following["ttft_p90_ms"] is not None
                    else ""
                )
                + f" (a slot must add {WORTH_IT - 1:.0%} to pay)."
            )
        if best is base:
            headline = (
                f"{base['slots']} slot{'s' if base['slots'] != 1 else ''} is enough on this machine: more slots "
                "did not add throughput, so the cores, not the slots, are the limit." + beyond
            )
        else:
            headline = (
                f"{best['slots']} slots for this machine: {gain:.2f}x the throughput of {base['slots']} at the same "
                "load." + beyond
            )
        if run is not None:
            lines.append(
                f"The tuning run behind this demo is run #{run} (Tune page): its launch command is there."
            )
        verdicts = {
            str(r["slots"]): SlotsVerdict(tok_s=r["tok_s"], ttft_p90_ms=r["ttft_p90_ms"], best=r is best)
            for r in rows
        }
        return Conclusion(headline, lines, verdicts)
