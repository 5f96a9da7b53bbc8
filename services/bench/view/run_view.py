"""One run as the Benchmarks page shows it, live or finished: its status texts, counts,
notes, tables and charts, and the run picker."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go

from services.bench import jobs, selfcheck
from services.bench.caveats import Caveats, run_caveats
from services.bench.comparability.build import requested_input_tokens
from services.bench.stats import CANCELLED, RequestRecord
from services.bench.summary import BenchSummary
from services.bench.time_split import engine_queues, loads_waited
from services.bench.view.charts import (
    by_engine,
    cdf_figure,
    concurrency_figure,
    engine_metrics_figure,
    live_figure,
    run_offsets,
    sweep_figure,
    timeline_figure,
)
from services.bench.view.costs import cheapest_line, cost_frontier_figure, cost_table, sweep_cost_points
from services.bench.view.split import split_figure, split_lines, split_table
from services.bench.view.tables import (
    energy_line,
    fold_not_measured,
    percentile_table,
    throughput_table,
)
from services.core import ids
from services.core.errors import ValidationError
from services.core.safe_text import md_line
from services.engines import get_adapter
from services.runstate.lifecycle import RunStatus
from services.telemetry.energy.records import NOT_MEASURED

if TYPE_CHECKING:
    from services.team.access import Viewer

#: Runs with at most this many measured requests per engine get the per-request timeline.
TIMELINE_MAX_REQUESTS = 300
#: The order the results view draws a finished run's charts in (those it has).
FIGURE_ORDER = (
    "latency_throughput",
    "cost_frontier",
    "ttft_cdf",
    "ttfat_cdf",
    "itl_cdf",
    "time_split",
    "engine_metrics",
    "concurrency",
    "timeline",
    "live",
)


@dataclass
class RunView:
    run: jobs.BenchRunView
    counts: dict[str, dict[str, int]]
    table: pd.DataFrame
    throughput: pd.DataFrame
    figures: dict[str, go.Figure]
    notes: list[str]
    #: The generator's self-check: the run's verdict, what it means for the figures and what
    #: to do, and each engine's (each sweep step's) evidence.
    self_check: selfcheck.RunCheck = field(default_factory=lambda: selfcheck.RunCheck(None))
    #: Where the time went: per engine in words (or "not reported by <engine>"), and the
    #: percentiles of each part.
    split_lines: list[str] = field(default_factory=list)
    split_table: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: The price the run used and $ per 1M tokens per engine (per step of a sweep).
    cost: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: The cheapest engine (step) meeting the SLOs in words; None when nothing is priced.
    cheapest: str | None = None

    @property
    def active(self) -> bool:
        return self.run.active

    @property
    def status_level(self) -> str:
        """How the status reads: "success", "warning" or "error"."""
        return {"finished": "success", "finished_with_errors": "warning", "cancelled": "warning"}.get(
            self.run.status, "error"
        )

    # The three texts below are markdown: what the run or a server named is escaped, the rest is ours.
    @property
    def status_markdown(self) -> str:
        partial = (
            " (partial results: what ran before the cancel)"
            if self.run.status == RunStatus.CANCELLED
            else ""
        )
        return f"Status: {md_line(self.run.status.replace('_', ' '))}{partial}"

    @property
    def progress_markdown(self) -> str:
        left = time_left(self.run.progress, self.run.started_at, datetime.now(UTC))
        return f"{md_line(self.run.status)}: {md_line(self.run.live.get('message'))}" + (
            f" · {left}" if left else ""
        )

    @property
    def count_lines(self) -> list[str]:
        """One line per engine of a live run: what completed, failed, was cancelled, warmed up."""
        lines = []
        for name, counts in self.counts.items():
            stopped = f", {counts['cancelled']} cancelled" if counts.get("cancelled") else ""
            lines.append(
                f"{md_line(name)}: {counts['completed']} completed, {counts['failed']} failed{stopped}, "
                f"{counts['warmup']} warm-up"
            )
        return lines

    @property
    def has_tables(self) -> bool:
        return not self.table.empty

    def ordered_figures(self) -> list[tuple[str, go.Figure]]:
        return [(name, self.figures[name]) for name in FIGURE_ORDER if name in self.figures]


#: Below this share done, a pace is mostly start-up (finding the model, calibrating prompts).
ESTIMATE_FROM_PROGRESS = 0.05


def time_left(progress: float, started_at: datetime | None, now: datetime) -> str | None:
    """A running benchmark's remaining time at its pace so far, in words ("about 2 min
    left"); None until enough of it is done to tell, or when it did not say when it began."""
    if started_at is None or not ESTIMATE_FROM_PROGRESS <= progress < 1:
        return None
    if started_at.tzinfo is None:  # SQLite gives back naive datetimes, stored in UTC
        started_at = started_at.replace(tzinfo=UTC)
    elapsed = (now - started_at).total_seconds()
    if elapsed <= 0:
        return None
    seconds = round(elapsed * (1 - progress) / progress)
    if seconds < 60:
        return f"about {max(1, seconds)} s left at the pace so far"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"about {minutes} min {rest:02d} s left at the pace so far"
    return f"about {minutes // 60} h {minutes % 60:02d} min left at the pace so far"


@dataclass(frozen=True)
class RunChoice:
    """The run picker: its labels by run id, and the run on screen."""

    labels: dict[int, str]
    selected: int
    #: Why the address's run was not taken ("" when it was, or named none).
    refused: str = ""


def run_choice(recent: list[jobs.BenchRunItem], wanted: str | None) -> RunChoice:
    """The run the address asks for (`?run=ID`), else the newest; a run older than the list
    still gets a label. No status in the labels: a label drawn while the run was pending
    stayed "(pending)" above "Status: finished"; the results show the status once."""
    labels = {item.id: f"#{item.id} {item.name}" for item in recent}
    try:
        selected, refused = ids.address_id(wanted) or recent[0].id, ""
    except ValidationError as error:
        selected, refused = recent[0].id, str(error)
    if selected not in labels:
        labels = {selected: f"#{selected}", **labels}
    return RunChoice(labels=labels, selected=selected, refused=refused)


def recent_runs(limit: int = 30) -> list[jobs.BenchRunItem]:
    return jobs.list_runs(limit)


def cancel(run_id: int, viewer: Viewer) -> bool:
    return jobs.cancel_run(run_id, viewer)


def run_view(run_id: int) -> RunView:
    """Everything the page shows for one run, live or finished."""
    run = jobs.get_run(run_id)
    finished = not run.active
    records = jobs.load_records(run_id, with_itl=finished)
    measured = [r for r in records if not r.warmup]
    counts: dict[str, dict[str, int]] = {}
    for record in records:
        block = counts.setdefault(
            record.engine, {"sent": 0, "completed": 0, "failed": 0, "cancelled": 0, "warmup": 0}
        )
        if record.warmup:
            block["warmup"] += 1
        else:
            block["sent"] += 1
            block[_outcome(record)] += 1
    results = run.results
    averages = {
        name: block.output_throughput_tok_s
        for name, block in results.engines.items()
        if block.output_throughput_tok_s is not None and block.from_step is None
    }
    offsets = run_offsets(results)
    figures: dict[str, go.Figure] = {"live": live_figure(measured, averages, offsets)}
    config = run.spec.to_dict()
    caveats = run_caveats(config, results)
    notes = _notes(run, caveats) + _energy_notes(results)
    table = percentile_table(results, run.spec.percentiles) if results.has_results else pd.DataFrame()
    throughput = (
        throughput_table(results, requested_input_tokens(config))
        if results.has_results
        else pd.DataFrame()
    )
    # One note instead of "not measured here: <reason>" in every engine's row (issue 47).
    throughput, energy_note = fold_not_measured(throughput, "energy measured by", "Energy")
    notes += [energy_note] if energy_note else []
    kinds = {e.name: get_adapter(e.kind).label for e in run.spec.engines}
    if finished and measured:
        figures["ttft_cdf"] = cdf_figure(
            {
                e: [r.ttft_s for r in rs if r.ok and r.ttft_s is not None]
                for e, rs in by_engine(measured).items()
            },
            "TTFT",
        )
        if any(r.ttft_includes_reasoning for r in measured):
            # A thinking engine's TTFT is its first thinking token: when its answer began.
            figures["ttfat_cdf"] = cdf_figure(
                {
                    e: [r.ttfat_s for r in rs if r.ok and r.ttfat_s is not None]
                    for e, rs in by_engine(measured).items()
                },
                "Time to first answer token",
            )
        figures["itl_cdf"] = cdf_figure(
            {e: [g for r in rs if r.ok for g in r.itl_s] for e, rs in by_engine(measured).items()},
            "ITL",
        )
        if results.sweep:
            figures["latency_throughput"] = sweep_figure(results.sweep, run.spec.sweep.dimension)
        frontier = cost_frontier_figure(sweep_cost_points(results))
        if frontier is not None:
            figures["cost_frontier"] = frontier
        labels = results.step_labels()
        figures["concurrency"] = concurrency_figure(measured, labels, offsets)
        per_engine = max((len(rs) for rs in by_engine(measured).values()), default=0)
        if per_engine <= TIMELINE_MAX_REQUESTS:
            # Each request's hover says its split as the summary's block does: with the queue
            # its engine does not time (llama.cpp's slot wait) read the same way.
            timed = engine_queues(
                measured,
                {e.name: e.kind for e in run.spec.engines},
                loads_waited(results.engines, results.sweep),
            )
            figures["timeline"] = timeline_figure(timed, labels, offsets)
        split = split_figure(results, kinds)
        if split is not None:
            figures["time_split"] = split
        if run.spec.record_engine_metrics:
            engine_figure = engine_metrics_figure(run_id, results, measured)
            if engine_figure is not None:
                figures["engine_metrics"] = engine_figure
    return RunView(
        run=run,
        counts=counts,
        table=table,
        throughput=throughput,
        figures=figures,
        notes=notes,
        self_check=run_self_check(results),
        split_lines=split_lines(results, kinds) if finished and results.has_results else [],
        split_table=split_table(results) if results.has_results else pd.DataFrame(),
        cost=cost_table(results, steps=True) if finished and results.has_results else pd.DataFrame(),
        cheapest=cheapest_line(results, run.spec.slo) if finished and results.has_results else None,
    )


def run_self_check(summary: BenchSummary) -> selfcheck.RunCheck:
    """The generator's self-check of a run: its verdict in plain words, what to do, and the
    evidence of each engine (each step of a sweep)."""
    return BenchSummary.from_json(summary).run_check()


def _outcome(record: RequestRecord) -> str:
    if record.ok:
        return "completed"
    return "cancelled" if record.error_class == CANCELLED else "failed"


def _notes(run: jobs.BenchRunView, caveats: Caveats) -> list[str]:
    """The run's caveats as the Runs page and the HTML report say them, and its error."""
    notes = [*caveats.load, *caveats.notes]
    if run.error:
        notes.append(f"Error: {run.error}")
    return notes


def _energy_notes(results: BenchSummary) -> list[str]:
    """What each engine's energy covers (shared GPUs, the whole CPU package) or why it was
    not measured: the table has the figures, these the words they need."""
    return [
        f"{name}: {line}"
        for name, block in results.engines_that_ran().items()
        # Not measured: the table's one note says why, for every engine at once.
        if (line := energy_line(block)) and not line.startswith(f"energy: {NOT_MEASURED}")
    ]
