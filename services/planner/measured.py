"""What the stored runs say beside the decision helper's ranking: per engine kind, the cheapest
step that met its run's SLOs ($ per 1M output tokens, at goodput where the run set SLOs) and
its energy per output token; "not priced" where no step of that kind had a price.

The figures are those each run stored when it finished (services/planner/steps.py reads them;
services/tune/pareto.py `cost_figure` says which cost counts): nothing is recomputed, and a
missing price or energy counter is said, never 0. Runs of different models and GPUs are not
comparable, so each line names the run, its model and its load, for the user to judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services.bench.spec import slo_of
from services.bench.stats import block_meets_slo
from services.core import cost, units
from services.core.safe_text import md_line
from services.planner.steps import StepRow, step_rows
from services.runstate.lifecycle import FINISHED_STATUSES, RunKind
from services.tune.pareto import cost_figure, energy_figure
from services.tune.summary import TuneSummary

#: Newest first, at most this many runs are read: the decision is about recent measurements.
RUNS_READ = 200
NO_RUNS = "Measured: no finished benchmark or tuning run of this engine kind is stored."


@dataclass(frozen=True)
class MeasuredStep:
    """One stored step of one engine kind, with what the decision needs of it."""

    run_id: int
    engine: str
    step: str
    model: str | None
    #: $ per 1M output tokens: at goodput when the run set SLOs; None without a price.
    usd_per_1m: float | None
    counted: str
    priced: bool
    meets_slos: bool
    j_per_output_token: float | None
    #: "0.13 J", "not measured here: <reason>", or "" for a run from before energy.
    energy: str

    @property
    def where(self) -> str:
        load = f" at {self.step}" if self.step else ""
        model = f", {self.model}" if self.model else ""
        return f"#{self.run_id} {self.engine}{load}{model}"


@dataclass(frozen=True)
class MeasuredKind:
    """An engine kind's stored steps and the line the decision helper shows for it."""

    kind: str
    steps: tuple[MeasuredStep, ...]

    @property
    def cheapest(self) -> MeasuredStep | None:
        """The lowest cost among the priced steps that met their SLOs."""
        meeting = [s for s in self.steps if s.meets_slos and s.usd_per_1m is not None]
        return min(meeting, key=lambda s: (s.usd_per_1m or 0.0, s.run_id)) if meeting else None

    @property
    def line(self) -> str:
        """Markdown, every stored name escaped."""
        if not self.steps:
            return NO_RUNS
        found = self.cheapest
        lowest = min(
            (s for s in self.steps if s.j_per_output_token is not None),
            key=lambda s: s.j_per_output_token or 0.0,
            default=None,
        )
        if found is not None:
            energy = f"; energy {found.energy}" if found.energy else ""
            if found.j_per_output_token is not None:
                energy = f", {found.energy} per output token"
            return md_line(
                f"Measured: cheapest meeting its SLOs {found.where}, "
                f"{units.usd(found.usd_per_1m, missing=cost.NOT_PRICED)} per 1M {found.counted}{energy}."
            )
        if any(s.priced for s in self.steps):
            text = f"Measured: none of the {len(self.steps)} stored steps met its SLOs at a price."
        else:
            text = (
                f"Measured: {len(self.steps)} stored steps, {cost.NOT_PRICED} (give a price per "
                "hour on the Engines page, or bench --usd-per-hour)."
            )
        if lowest is not None:
            text += f" Lowest energy: {lowest.energy} per output token ({lowest.where})."
        return md_line(text)


def _measured(
    run_id: int, model: str | None, row: StepRow, with_slos: bool, meets: bool
) -> MeasuredStep:
    usd, counted = cost_figure(row.block, with_slos)
    joules, energy = energy_figure(row.block)
    return MeasuredStep(
        run_id=run_id,
        engine=row.engine,
        step=row.step,
        model=model,
        usd_per_1m=usd,
        counted=counted,
        priced=row.cost.priced,
        meets_slos=meets,
        j_per_output_token=joules,
        energy=energy,
    )


def measured_by_kind(limit: int = RUNS_READ) -> dict[str, MeasuredKind]:
    """Engine kind -> its stored steps (finished benchmark and tuning runs, not archived)."""
    found: dict[str, list[MeasuredStep]] = {}
    with session_scope() as session:
        runs = session.scalars(
            select(Run)
            .where(
                Run.archived.is_(False),
                Run.status.in_(FINISHED_STATUSES),
                Run.kind.in_((RunKind.BENCHMARK, RunKind.TUNE)),
            )
            .order_by(Run.created_at.desc(), Run.id.desc())
            .limit(limit)
        ).all()
        for run in runs:
            config = run.config if isinstance(run.config, dict) else {}
            slo = slo_of(config)
            if run.kind == RunKind.TUNE:
                tune_kind = TuneSummary.from_json(run.summary).kind
                kinds = {}
            else:
                tune_kind = None
                kinds = {
                    str(s.get("name")): str(s.get("kind"))
                    for s in run.engines or []
                    if isinstance(s, dict) and s.get("kind")
                }
            for row in step_rows(run.kind, run.summary):
                kind = tune_kind or kinds.get(row.engine)
                if not kind:
                    continue
                model = row.block.model or run.model
                meets = block_meets_slo(row.block, slo)
                found.setdefault(kind, []).append(_measured(run.id, model, row, slo.active, meets))
    return {kind: MeasuredKind(kind, tuple(steps)) for kind, steps in found.items()}
