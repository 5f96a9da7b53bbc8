"""What the Tune page shows, ready to render: the form's choices turned into a run, the
configurations' table, throughput-against-latency charts with the Pareto front, the winner,
and registering it as an engine. No Streamlit here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go

from services.bench.arrivals import LoadSpec
from services.bench.stats import SloSpec
from services.bench.view.costs import cost_frontier_figure as figure_of
from services.bench.view.costs import cost_point
from services.bench.view.tables import fold_not_measured
from services.bench.workloads import WorkloadSpec
from services.core import cost, stored_json, units
from services.core.errors import ValidationError
from services.engines import endpoints
from services.team import access
from services.team.access import commands_allowed
from services.team.owners import may_control_run
from services.tune import jobs
from services.tune.commands import kind_launch
from services.tune.jobs import TuneRunView, cancel_run, get_run, list_runs
from services.tune.pareto import cost_figure, energy_figure, pareto_front, points_of
from services.tune.spec import TuneSpec, catalogue, local_kinds, parse_set
from services.tune.summary import TuneSummary, launch_of

#: What the page reads: this module's own, and what it passes on from the feature's others.
__all__ = [
    "COST_COLUMN",
    "ENERGY_COLUMN",
    "LATENCY_AXES",
    "TuneForm",
    "TuneRunView",
    "Winner",
    "cancel_run",
    "cheapest",
    "commands_allowed",
    "config_table",
    "cost_frontier_figure",
    "fold_not_measured",
    "get_run",
    "kinds",
    "list_runs",
    "may_control_run",
    "pareto_figure",
    "register_winner",
    "settings_help",
    "spec_from_form",
    "submit",
    "winner",
]

if TYPE_CHECKING:
    from services.team.access import Viewer

LATENCY_AXES = {"ttft_s": "p90 TTFT (ms)", "itl_s": "p90 ITL (ms)"}


def kinds(viewer: Viewer) -> list[str]:
    """Kinds this viewer may tune: local ones, and the others where command templates may run."""
    return list(catalogue()) if access.commands_allowed(viewer) else list(local_kinds())


def settings_help(kind: str) -> str:
    return "; ".join(f"{s.key}: {s.help}" for s in catalogue().get(kind, ()))


@dataclass(frozen=True)
class TuneForm:
    """What the page's form holds; 0 for an SLO is none, an empty start command is the local
    launcher."""

    kind: str = "llamacpp"
    #: One `KEY=V1,V2` per line.
    grid: str = ""
    concurrency: int = 2
    requests: int = 8
    input_len: int = 32
    output_len: int = 16
    slo_ttft_ms: float = 0.0
    slo_tpot_ms: float = 0.0
    slo_ttfat_ms: float = 0.0
    usd_per_hour: str = ""
    name: str = ""
    start_command: str = ""
    stop_command: str = ""
    base_url: str = "http://127.0.0.1:{port}"


def spec_from_form(form: TuneForm) -> TuneSpec:
    """The page's form as a TuneSpec."""
    grid: dict[str, tuple[str, ...]] = {}
    for line in form.grid.splitlines():
        if line.strip():
            key, found = parse_set(line)
            grid[key] = found
    if not grid:
        raise ValidationError("Give at least one setting to vary, for example np=1,2,4.")
    return TuneSpec(
        kind=form.kind,
        grid=grid,
        workload=WorkloadSpec(input_len=int(form.input_len), output_len=int(form.output_len)),
        load=LoadSpec(concurrency=int(form.concurrency), requests=int(form.requests)),
        slo=SloSpec(
            ttft_ms=form.slo_ttft_ms or None,
            tpot_ms=form.slo_tpot_ms or None,
            ttfat_ms=form.slo_ttfat_ms or None,
        ),
        usd_per_hour=cost.parse_usd_per_hour(form.usd_per_hour),
        launcher="command" if form.start_command.strip() else "local",
        start_command=form.start_command,
        stop_command=form.stop_command,
        base_url=form.base_url,
        name=form.name,
    )


def submit(form: TuneForm, viewer: Viewer) -> int:
    return jobs.start_tuning(spec_from_form(form), viewer)


def config_table(summary: TuneSummary) -> pd.DataFrame:
    """One row per configuration: status, throughput, goodput, latency percentiles, reason."""
    results = TuneSummary.from_json(summary)
    front = results.on_front()
    best = results.best_label
    cheapest = stored_json.nonempty_text(results.cheapest.get("label"))
    # With SLOs the cost counts only the tokens within them, as the cheapest's choice does.
    with_slos = results.slo is not None
    rows = []
    for config in results.tuned:
        metrics = config.metrics
        ttft = metrics.ttft_s if metrics is not None else None
        itl = metrics.itl_s if metrics is not None else None
        e2e = metrics.e2e_s if metrics is not None else None
        rows.append(
            {
                "configuration": config.label,
                "status": config.status.replace("_", " "),
                "best": "★" if config.label == best else "",
                "on front": "yes" if config.label in front else "",
                "output tok/s": _round(metrics.output_throughput_tok_s if metrics else None),
                "req/s": _round(metrics.request_throughput_rps if metrics else None, 3),
                "goodput req/s": _round(metrics.goodput_rps if metrics else None, 3),
                COST_COLUMN: units.usd(cost_figure(metrics, with_slos)[0], missing=cost.NOT_PRICED)
                if metrics
                else "",
                ENERGY_COLUMN: energy_figure(metrics)[1] if metrics else "",
                "cheapest": "$" if config.label == cheapest else "",
                "TTFT p50 ms": units.to_ms(ttft.p50 if ttft else None, 1),
                "TTFT p90 ms": units.to_ms(ttft.p90 if ttft else None, 1),
                "TTFT p99 ms": units.to_ms(ttft.p99 if ttft else None, 1),
                "ITL p90 ms": units.to_ms(itl.p90 if itl else None, 1),
                "E2E p90 ms": units.to_ms(e2e.p90 if e2e else None, 1),
                "completed": metrics.completed if metrics else None,
                "failed": metrics.failed if metrics else None,
                "reason": config.reason,
            }
        )
    table = pd.DataFrame(rows)
    # A column with no value at all (goodput without SLOs) is left out, not shown as "None".
    return table.dropna(axis="columns", how="all")


#: The table's cost column: at goodput with SLOs, else per output token (services/tune/pareto.py).
COST_COLUMN = "$/1M output tok"
#: The table's energy column: joules per output token, or why it was not measured.
ENERGY_COLUMN = "J/output tok"


def cheapest(summary: TuneSummary) -> Winner:
    """The cheapest configuration meeting the SLOs, with its launch commands; label None (and
    the reason: no price, none met the SLOs, a run from before prices) when there is none."""
    results = TuneSummary.from_json(summary)
    found = results.cheapest
    launch = launch_of(found)
    reason = str(found.get("reason") or f"Cost per 1M tokens: {cost.NOT_PRICED}.")
    return Winner(
        stored_json.nonempty_text(found.get("label")),
        reason,
        launch.get("plain"),
        launch.get("docker"),
        {},
        None,
    )


def _round(value: Any, digits: int = 1) -> float | None:
    return round(float(value), digits) if isinstance(value, (int, float)) else None


def cost_frontier_figure(summary: TuneSummary) -> go.Figure | None:
    """$ per 1M output tokens against tokens/s per user, every configuration (and sweep level)
    a point, the frontier across configurations drawn; None when the run was not priced."""
    points = []
    for config in TuneSummary.from_json(summary).tuned:
        for level, block in config.steps:
            label = config.label + (f" @ {level:g}" if level is not None else "")
            point = cost_point(config.label, label, block)
            if point is not None:
                points.append(point)
    return figure_of(points)


def pareto_figure(summary: TuneSummary, metric: str) -> go.Figure | None:
    """Output tokens/s against the p90 of `metric`, every configuration (and sweep level) a
    point, the Pareto front drawn as a line through its points."""
    points = points_of(TuneSummary.from_json(summary).tuned, metric)
    if not points:
        return None
    front = pareto_front(points)
    on_front = {p.label for p in front}
    others = [p for p in points if p.label not in on_front]
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=[p.latency * 1000 for p in others],
            y=[p.throughput for p in others],
            mode="markers+text",
            name="dominated",
            text=[p.label for p in others],
            textposition="bottom center",
            marker={"color": "#9aa0a6", "size": 10},
            cliponaxis=False,
            hovertemplate="%{text}<br>%{x:.0f} ms, %{y:.1f} tok/s<extra></extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=[p.latency * 1000 for p in front],
            y=[p.throughput for p in front],
            mode="lines+markers+text",
            name="Pareto front",
            text=[p.label for p in front],
            textposition="top center",
            cliponaxis=False,
            marker={"color": "#d93025", "size": 13, "symbol": "star"},
            line={"color": "#d93025", "dash": "dot"},
            hovertemplate="%{text}<br>%{x:.0f} ms, %{y:.1f} tok/s<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"Throughput against {LATENCY_AXES[metric]}",
        xaxis_title=LATENCY_AXES[metric],
        yaxis_title="output tokens/s",
        height=420,
        margin={"t": 50, "b": 40, "l": 60, "r": 30},
    )
    # Room around the points for their labels.
    figure.update_xaxes(rangemode="tozero")
    figure.update_yaxes(rangemode="tozero")
    return figure


@dataclass(frozen=True)
class Winner:
    label: str | None
    reason: str
    plain: str | None
    docker: str | None
    settings: dict[str, str]
    #: What one run per configuration cannot tell (None without a winner).
    caveat: str | None = None


def _noise_caveat(results: TuneSummary) -> str | None:
    """The verdict rests on one run of each configuration, with no measure of its noise: said
    beside it, with the gap to the runner-up, so a 2% lead is not read as settled (issue 36)."""
    if results.best_label is None:
        return None
    rates = sorted(
        (
            (rate, config.label)
            for config in results.tuned
            if config.metrics is not None
            and (rate := config.metrics.output_throughput_tok_s) is not None
            and rate > 0
        ),
        reverse=True,
    )
    gap = ""
    if len(rates) > 1:
        (top, first), (second, runner_up) = rates[0], rates[1]
        gap = (
            f" The top two by output tokens/s ({first}, {runner_up}) are {(top / second - 1):.0%} apart."
        )
    return (
        "Each configuration ran once, so run-to-run noise is not measured: a lead of a few percent "
        f"may not repeat.{gap} Run the leaders again before relying on the order."
    )


def winner(summary: TuneSummary) -> Winner:
    results = TuneSummary.from_json(summary)
    launch = results.launch
    return Winner(
        results.best_label,
        results.best_reason,
        launch.get("plain"),
        launch.get("docker"),
        results.best_settings,
        _noise_caveat(results),
    )


def register_winner(run_id: int, name: str, viewer: Viewer | None) -> str:
    """Register the winning configuration as an engine (URL: its launch command's port on this
    host), with its launch commands and settings in the engine's info; returns the name."""
    if viewer is not None:
        access.require(viewer, "manage_engines")
    view = jobs.get_run(run_id)
    found = winner(view.results)
    if found.label is None:
        raise ValidationError("This tuning run has no winning configuration to register.")
    name = name.strip() or f"tuned-{view.spec.kind}-{run_id}"
    port = kind_launch(view.spec.kind).default_port
    info: endpoints.EngineInfo = {
        "tuned_by_run": run_id,
        "settings": found.settings,
        "launch": found.plain,
        "launch_docker": found.docker,
        "description": f"Tuned by run #{run_id}: {found.label}",
    }
    endpoints.add_engine(
        name,
        f"http://127.0.0.1:{port}",
        kind=view.spec.kind,
        model=view.spec.model,
        info=info,
        usd_per_hour=view.spec.usd_per_hour,
    )
    return name
