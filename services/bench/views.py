"""What the Benchmarks page shows, built from the database: the form's choices, the spec a
filled form describes, and one run's view (live progress, percentile table, charts).

Plain data and plotly figures out, no streamlit in. Live views read the stored rows, so any
number of viewers see the same progress, and a page opened later sees the same run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from services.bench import form, jobs, selfcheck
from services.bench.arrivals import ARRIVAL_PROCESSES
from services.bench.spec import BenchSpec
from services.bench.stats import CANCELLED, RequestRecord, cdf_points, throughput_series
from services.bench.summary import BenchSummary
from services.bench.workloads import LENGTH_DISTRIBUTIONS, TRACE_ATTRIBUTION, TRACES
from services.measure import percentile_key
from services.safe_text import md_line

if TYPE_CHECKING:
    from services.access import Viewer

#: Runs with at most this many measured requests per engine get the per-request timeline.
TIMELINE_MAX_REQUESTS = 300
LIVE_POINTS = 2000
METRIC_TITLES = {"ttft_s": "TTFT", "tpot_s": "TPOT", "itl_s": "ITL", "e2e_s": "E2E latency"}
WORKLOAD_TITLES = {
    "synthetic": "Synthetic prompts",
    "long_prompt": "Long prompts, short answers (prefill)",
    "shared_prefix": "Shared prefixes (prefix cache)",
    "multi_turn": "Multi-turn conversations",
    "structured": "Structured output (JSON schema)",
    "file": "Prompts from a JSONL file",
    "trace": "Azure production trace",
}
LOAD_TITLES = {
    "concurrency": "Closed loop: fixed concurrency",
    "rate": "Open loop: request rate",
    "trace": "Trace replay: real arrival times",
}
SWEEP_TITLES = {
    "none": "Single load level",
    "concurrency": "Sweep the concurrency",
    "rate": "Sweep the request rate",
    "slo_search": "Search the highest load meeting the SLOs",
}
#: The order the results view draws a finished run's charts in (those it has).
FIGURE_ORDER = (
    "latency_throughput",
    "ttft_cdf",
    "itl_cdf",
    "engine_metrics",
    "concurrency",
    "timeline",
    "live",
)


@dataclass(frozen=True)
class FormOptions:
    engines: list[str]
    workloads: dict[str, str] = field(default_factory=lambda: dict(WORKLOAD_TITLES))
    loads: dict[str, str] = field(default_factory=lambda: dict(LOAD_TITLES))
    sweeps: dict[str, str] = field(default_factory=lambda: dict(SWEEP_TITLES))
    length_dists: tuple[str, ...] = LENGTH_DISTRIBUTIONS
    traces: tuple[str, ...] = tuple(TRACES)
    arrivals: tuple[str, ...] = ARRIVAL_PROCESSES
    search_over: tuple[str, ...] = ("rate", "concurrency")
    trace_attribution: str = TRACE_ATTRIBUTION
    #: The widgets' initial values: the same defaults as `cli.py bench`'s.
    defaults: form.BenchForm = field(default_factory=form.BenchForm)
    suggested_duration_s: float = form.SUGGESTED_DURATION_S

    @property
    def sweep_levels_text(self) -> str:
        return ", ".join(f"{level:g}" for level in self.defaults.sweep_values)

    @property
    def workers_text(self) -> str:
        return form.workers_text(self.defaults.workers)


def form_options() -> FormOptions:
    from services.endpoints import list_engines

    return FormOptions(engines=[engine.name for engine in list_engines()])


def spec_from_form(values: dict[str, Any]) -> BenchSpec:
    """The validated spec of the page's widget values (ValidationError with a message for the user)."""
    return form.to_spec(form.from_widgets(values))


def save_prompt_file(name: str, content: bytes) -> str:
    """Keep an uploaded JSONL prompt file with the app's data (named by its content, so a
    rerun of the same run finds the same file); returns its path. Validated right away."""
    import hashlib

    from services.bench.workloads import load_prompt_file
    from services.config import get_settings

    folder = get_settings().data_dir / "workloads"
    folder.mkdir(parents=True, exist_ok=True)
    stem = (
        "".join(c if c.isalnum() or c in "-_" else "_" for c in name.rsplit(".", 1)[0])[:60] or "prompts"
    )
    path = folder / f"{stem}-{hashlib.sha256(content).hexdigest()[:12]}.jsonl"
    path.write_bytes(content)
    load_prompt_file(str(path))
    return str(path)


def submit(values: dict[str, Any], viewer: Viewer | None = None) -> int:
    """Validate a filled form and start its run in a worker; returns the run id. A viewer's
    prompt file must be one they uploaded: a path on the server is an operator's to name."""
    from services import access
    from services.config import get_settings

    prompts_file = str(values.get("prompts_file") or "").strip()
    if viewer is not None and prompts_file and values.get("workload") == "file":
        uploads = (get_settings().data_dir / "workloads").resolve()
        if Path(prompts_file).resolve().parent != uploads:
            access.require(viewer, "read_server_paths")
    spec = spec_from_form(values)
    if spec.ray_address:
        from services.bench.ray_pool import check_reachable

        if viewer is not None:
            access.require(viewer, "fetch_urls")
        check_reachable(spec.ray_address)
    return jobs.start_benchmark(spec, viewer=viewer)


# ---------------------------------------------------------------------------------------
# One run's view
# ---------------------------------------------------------------------------------------


@dataclass
class RunView:
    run: jobs.BenchRunView
    counts: dict[str, dict[str, int]]
    table: pd.DataFrame
    throughput: pd.DataFrame
    figures: dict[str, go.Figure]
    notes: list[str]
    #: The generator's self-check, one line per engine (and sweep step); client_bound when
    #: any of them says the client, not the engine, limited the figures.
    generator: list[str] = field(default_factory=list)
    client_bound: bool = False

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
            " (partial results: what ran before the cancel)" if self.run.status == "cancelled" else ""
        )
        return f"Status: {md_line(self.run.status.replace('_', ' '))}{partial}"

    @property
    def progress_markdown(self) -> str:
        return f"{md_line(self.run.status)}: {md_line(self.run.live.get('message'))}"

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


@dataclass(frozen=True)
class RunChoice:
    """The run picker: its labels by run id, and the run on screen."""

    labels: dict[int, str]
    selected: int


def run_choice(recent: list[jobs.BenchRunItem], wanted: str | None) -> RunChoice:
    """The run the address asks for (`?run=ID`), else the newest; a run older than the list
    still gets a label. No status in the labels: a label drawn while the run was pending
    stayed "(pending)" above "Status: finished"; the results show the status once."""
    labels = {item.id: f"#{item.id} {item.name}" for item in recent}
    selected = int(wanted) if wanted and wanted.isdigit() else recent[0].id
    if selected not in labels:
        labels = {selected: f"#{selected}", **labels}
    return RunChoice(labels=labels, selected=selected)


def recent_runs(limit: int = 30) -> list[jobs.BenchRunItem]:
    return jobs.list_runs(limit)


def cancel(run_id: int) -> bool:
    return jobs.cancel_run(run_id)


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
        name: block["output_throughput_tok_s"]
        for name, block in results.engines.items()
        if isinstance(block.get("output_throughput_tok_s"), (int, float)) and "from_step" not in block
    }
    offsets = run_offsets(results)
    figures: dict[str, go.Figure] = {"live": live_figure(measured, averages, offsets)}
    notes = _notes(run)
    table = percentile_table(results, run.spec.percentiles) if results.has_results else pd.DataFrame()
    throughput = throughput_table(results) if results.has_results else pd.DataFrame()
    if finished and measured:
        figures["ttft_cdf"] = cdf_figure(
            {
                e: [r.ttft_s for r in rs if r.ok and r.ttft_s is not None]
                for e, rs in _by_engine(measured).items()
            },
            "TTFT",
        )
        figures["itl_cdf"] = cdf_figure(
            {e: [g for r in rs if r.ok for g in r.itl_s] for e, rs in _by_engine(measured).items()},
            "ITL",
        )
        if results.sweep:
            figures["latency_throughput"] = sweep_figure(results.sweep, run.spec.sweep.dimension)
        labels = results.step_labels()
        figures["concurrency"] = concurrency_figure(measured, labels, offsets)
        per_engine = max((len(rs) for rs in _by_engine(measured).values()), default=0)
        if per_engine <= TIMELINE_MAX_REQUESTS:
            figures["timeline"] = timeline_figure(measured, labels, offsets)
        if run.spec.record_engine_metrics:
            engine_figure = engine_metrics_figure(run_id, results, measured)
            if engine_figure is not None:
                figures["engine_metrics"] = engine_figure
    client_bound, generator = generator_lines(results)
    return RunView(
        run=run,
        counts=counts,
        table=table,
        throughput=throughput,
        figures=figures,
        notes=notes,
        generator=generator,
        client_bound=client_bound,
    )


def generator_lines(summary: BenchSummary | dict[str, Any]) -> tuple[bool, list[str]]:
    """The self-check of each engine (each step of a sweep) as a line, and the verdict."""
    return selfcheck.summary_lines(summary)


def _outcome(record: RequestRecord) -> str:
    if record.ok:
        return "completed"
    return "cancelled" if record.error_class == CANCELLED else "failed"


def _by_engine(records: list[RequestRecord]) -> dict[str, list[RequestRecord]]:
    groups: dict[str, list[RequestRecord]] = {}
    for record in records:
        groups.setdefault(record.engine, []).append(record)
    return groups


def _notes(run: jobs.BenchRunView) -> list[str]:
    summary = run.results
    notes = []
    for name, block in summary.engines.items():
        if block.get("not_run"):
            notes.append(f"{name} did not run: the run ended before its turn.")
        if block.get("honoured_output_len") is False:
            notes.append(
                f"{name} did not honour the fixed output length: {block.get('short_output_requests')} "
                "answers were shorter than asked (it stopped at its end-of-sequence token)."
            )
        unsupported = block.get("unsupported_options") or []
        if unsupported:
            notes.append(f"{name} ignores {', '.join(unsupported)} (its kind does not take them).")
    if summary.sweep:
        labels = summary.step_labels()
        reported = [
            f"{name} at {labels.get(step, f'step {step}')}"
            for name, block in summary.engines.items()
            if (step := block.get("from_step")) is not None
        ]
        how = "the SLO search's answer" if summary.slo_search else "highest request throughput"
        if reported:
            notes.append(
                f"The tables show one step per engine ({how}): {', '.join(reported)}; "
                "the charts below show every step."
            )
    for name, reason in summary.stopped_early.items():
        notes.append(f"{name}: the sweep stopped early: {reason}.")
    for name, found in summary.slo_search.items():
        best = found.get("best")
        if best is None:
            notes.append(
                f"{name}: even the lowest {found['dimension']} missed the SLOs ({found['slo']})."
            )
        else:
            more = " (the search maximum: it may go higher)" if found.get("reached_maximum") else ""
            notes.append(
                f"{name}: highest {found['dimension']} meeting the SLOs ({found['slo']}, "
                f"{found['required_attainment']:.0%} of requests): {best:g}{more}."
            )
    calibration = summary.prompt_calibration
    if calibration.get("method") == "tokenize":
        notes.append(
            f"Prompt lengths checked against {calibration.get('engine')}'s tokenizer "
            f"({calibration.get('words_kept')} of {calibration.get('words_checked')} words are one token)."
        )
    if summary.data_attribution:
        notes.append(summary.data_attribution)
    if summary.engines_run:
        notes.append(f"Engines ran {summary.engines_run}.")
    if run.error:
        notes.append(f"Error: {run.error}")
    return notes


def percentile_table(
    summary: BenchSummary | dict[str, Any], percentiles: tuple[float, ...] = (50, 90, 95, 99)
) -> pd.DataFrame:
    """One row per engine and latency metric: mean, percentiles and max in milliseconds."""
    rows = []
    keys = ["mean", *(percentile_key(q) for q in sorted({50.0, 90.0, 95.0, 99.0, *percentiles})), "max"]
    for name, block in BenchSummary.from_json(summary).engines_that_ran().items():
        for metric, title in METRIC_TITLES.items():
            stats = block.get(metric) or {}
            row: dict[str, Any] = {"engine": name, "metric": title}
            for key in keys:
                value = stats.get(key)
                row[f"{key} (ms)"] = round(value * 1000, 2) if isinstance(value, (int, float)) else None
            rows.append(row)
    return fill_missing(pd.DataFrame(rows))


def throughput_table(summary: BenchSummary | dict[str, Any]) -> pd.DataFrame:
    """One row per engine: counts, throughputs, goodput and the engine's own cache figures."""
    rows = []
    for name, block in BenchSummary.from_json(summary).engines_that_ran().items():
        metrics = block.get("engine_metrics") or {}
        errors = ", ".join(f"{k} {v}" for k, v in sorted((block.get("errors_by_class") or {}).items()))
        rows.append(
            {
                "engine": name,
                "completed": block.get("completed"),
                "failed": block.get("failed"),
                # Stopped by the user in flight: neither completed nor the engine's failure.
                "cancelled": block.get("cancelled_requests") or None,
                "errors": errors,
                "requests/s": _round(block.get("request_throughput_rps")),
                "output tok/s": _round(block.get("output_throughput_tok_s")),
                "total tok/s": _round(block.get("total_token_throughput_tok_s")),
                "goodput req/s": _round(block.get("goodput_rps")),
                "input tokens": block.get("input_tokens"),
                "output tokens": block.get("output_tokens"),
                "cached tokens": block.get("cached_tokens"),
                # Shares as percentages, as the Monitor and Runs pages show them.
                "prefix hit rate (%)": _percent(metrics.get("prefix_cache_hit_rate")),
                "KV usage max (%)": _percent(metrics.get("kv_cache_usage_max")),
                "schema valid (%)": _percent(block.get("schema_valid_rate")),
            }
        )
    # A column no engine has a value for (goodput without SLOs, schema validity without a
    # schema) says nothing: leave it out rather than show "None" in every row; a cell one
    # engine lacks reads "–" (not reported), never "None".
    return fill_missing(pd.DataFrame(rows).dropna(axis=1, how="all"))


def _percent(value: Any) -> float | None:
    return (
        round(float(value) * 100, 1)
        if isinstance(value, (int, float)) and not math.isnan(value)
        else None
    )


def fill_missing(frame: pd.DataFrame, mark: str = "–") -> pd.DataFrame:
    """Missing cells as a dash: Streamlit draws None and NaN as the word "None"."""
    return frame.astype(object).where(frame.notna(), mark)


def step_labels(summary: BenchSummary | dict[str, Any]) -> dict[int, str]:
    """Sweep step -> its load level in words ("concurrency 4", "rate 2.5")."""
    return BenchSummary.from_json(summary).step_labels()


def _round(value: Any, digits: int = 2) -> float | None:
    return round(value, digits) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _layout(figure: go.Figure, title: str, x: str, y: str) -> go.Figure:
    # The legend sits to the right, outside the plot: below it, it covered the x-axis title.
    figure.update_layout(
        title=title,
        xaxis_title=x,
        yaxis_title=y,
        height=360,
        margin={"t": 48, "b": 40},
        uirevision="constant",
    )
    return figure


#: Plotly's default sequence, fixed so an engine keeps its colour across its traces.
ENGINE_COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880")


def live_figure(
    records: list[RequestRecord],
    averages: dict[str, float] | None = None,
    offsets: dict[tuple[str, int | None], float] | None = None,
) -> go.Figure:
    """TTFT of each finished request, and output tokens/s by when the tokens arrived (even
    1 s bins, zeros included), per engine; `averages` (the results table's output tokens/s)
    are drawn as dotted lines, so the chart and the table can be read against each other."""
    figure = make_subplots(
        rows=1, cols=2, subplot_titles=("TTFT of each request (ms)", "Output tokens/s")
    )
    for number, (name, group) in enumerate(_by_engine(records).items()):
        colour = ENGINE_COLOURS[number % len(ENGINE_COLOURS)]  # one colour per engine in all its traces
        done = [r for r in group if r.ok and r.start_s is not None and r.ttft_s is not None][
            -LIVE_POINTS:
        ]
        shift = _offset(offsets, group[0])
        figure.add_trace(
            go.Scattergl(
                # `done` holds only requests with both times (`or 0.0` is for the type checker).
                x=[(r.start_s or 0.0) + shift for r in done],
                y=[(r.ttft_s or 0.0) * 1000 for r in done],
                mode="markers",
                name=f"{name} TTFT",
                marker={"size": 5, "color": colour},
                legendgroup=name,
            ),
            row=1,
            col=1,
        )
        series = [{**point, "t_s": point["t_s"] + shift} for point in throughput_series(group, 1.0)]
        # Each 1 s bin drawn over its whole width: the step line needs the end of the last bin.
        xs = [p["t_s"] for p in series] + ([series[-1]["t_s"] + 1.0] if series else [])
        ys = [p["output_tok_s"] for p in series] + ([series[-1]["output_tok_s"]] if series else [])
        figure.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line={"shape": "hv", "color": colour},
                name=f"{name} tok/s",
                legendgroup=name,
            ),
            row=1,
            col=2,
        )
        average = (averages or {}).get(name)
        if average is not None and series:
            figure.add_trace(
                go.Scatter(
                    x=[xs[0], xs[-1]],
                    y=[average, average],
                    mode="lines",
                    line={"dash": "dot", "color": colour},
                    legendgroup=name,
                    name=f"{name} run average {average:,.1f} tok/s",
                ),
                row=1,
                col=2,
            )
    figure.update_xaxes(title_text=_time_axis(offsets))
    figure.update_yaxes(title_text="ms", row=1, col=1)
    figure.update_yaxes(title_text="tokens/s", rangemode="tozero", row=1, col=2)
    figure.update_layout(height=340, margin={"t": 40, "b": 40}, uirevision="live")
    return figure


def run_offsets(summary: BenchSummary | dict[str, Any]) -> dict[tuple[str, int | None], float] | None:
    """Seconds from the run's first start to each engine's (and sweep step's) own time zero.
    Request times are kept from their own engine's start; engines run one after another
    drawn from their own zeros looked simultaneous. None when the run did not record when
    each part started (older runs): then each part is drawn from its own zero, and said so."""
    starts = BenchSummary.from_json(summary).start_times()
    if not starts:
        return None
    first = min(starts.values())
    return {key: value - first for key, value in starts.items()}


def _offset(offsets: dict[tuple[str, int | None], float] | None, record: RequestRecord) -> float:
    if not offsets:
        return 0.0
    return offsets.get((record.engine, record.step), offsets.get((record.engine, None), 0.0))


def _time_axis(offsets: dict[tuple[str, int | None], float] | None) -> str:
    return (
        "seconds since the run started (wall clock)"
        if offsets
        else "seconds from each engine's own start"
    )


def concurrency_figure(
    records: list[RequestRecord],
    labels: dict[int, str] | None = None,
    offsets: dict[tuple[str, int | None], float] | None = None,
) -> go.Figure:
    """Requests in flight over time, per engine (and sweep step), on the run's wall clock."""
    from services.bench.stats import concurrency_timeline

    figure = go.Figure()
    groups: dict[tuple[str, int | None], list[RequestRecord]] = {}
    for record in records:
        groups.setdefault((record.engine, record.step), []).append(record)
    for (name, step), group in groups.items():
        timeline = concurrency_timeline(group)
        shift = _offset(offsets, group[0])
        label = name if step is None else f"{name}, {(labels or {}).get(step, f'step {step}')}"
        figure.add_trace(
            go.Scatter(
                x=[t + shift for t, _ in timeline],
                y=[n for _, n in timeline],
                mode="lines",
                line={"shape": "hv"},
                name=label,
            )
        )
    return _layout(figure, "Requests in flight", _time_axis(offsets), "requests")


def cdf_figure(values_by_engine: dict[str, list[float]], label: str) -> go.Figure:
    figure = go.Figure()
    for name, values in values_by_engine.items():
        xs, ys = cdf_points([v * 1000 for v in values])
        figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name))
    return _layout(
        figure,
        f"{label} distribution (CDF)",
        f"{label} (ms)",
        "share of requests" if label == "TTFT" else "share of tokens",
    )


def sweep_figure(rows: list[dict[str, Any]], dimension: str) -> go.Figure:
    """Latency against throughput, one curve per engine, one point per load level."""
    figure = make_subplots(
        rows=1, cols=2, subplot_titles=("p50 TTFT vs throughput", "p50 TPOT vs throughput")
    )
    engines: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        engines.setdefault(row["engine"], []).append(row)
    for name, steps in engines.items():
        steps = sorted(steps, key=lambda r: r.get(dimension) or 0)
        x = [r.get("output_throughput_tok_s") for r in steps]
        text = [
            f"{dimension} {r.get(dimension):g}" if r.get(dimension) is not None else "" for r in steps
        ]
        for col, metric in ((1, "ttft_s"), (2, "tpot_s")):
            y = [((r.get(metric) or {}).get("p50") or float("nan")) * 1000 for r in steps]
            figure.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines+markers",
                    name=name,
                    text=text,
                    legendgroup=name,
                    showlegend=col == 1,
                    hovertemplate="%{text}<br>%{x:.1f} tok/s, %{y:.1f} ms",
                ),
                row=1,
                col=col,
            )
    figure.update_xaxes(title_text="output tokens/s")
    figure.update_yaxes(title_text="ms")
    figure.update_layout(height=380, margin={"t": 40, "b": 40}, uirevision="constant")
    return figure


def timeline_figure(
    records: list[RequestRecord],
    labels: dict[int, str] | None = None,
    offsets: dict[tuple[str, int | None], float] | None = None,
) -> go.Figure:
    """Every request as a bar on the run's wall clock: waiting for the first token, then
    streaming (failed in red); engines run one after another appear one after another."""
    figure = go.Figure()
    ordered = sorted(
        records,
        key=lambda r: (_offset(offsets, r), r.engine, -1 if r.step is None else r.step, r.start_s or 0),
    )
    names = labels or {}
    bars = [
        f"{r.engine} #{r.index}" + (f", {names.get(r.step, f's{r.step}')}" if r.step is not None else "")
        for r in ordered
    ]
    starts = [(r.start_s or 0.0) + _offset(offsets, r) for r in ordered]
    ttft = [(r.ttft_s or (r.e2e_s or 0.0)) if r.ok else 0.0 for r in ordered]
    decode = [max(0.0, (r.e2e_s or 0.0) - (r.ttft_s or 0.0)) if r.ok else 0.0 for r in ordered]
    failed = [(r.e2e_s or 0.0) if not r.ok else 0.0 for r in ordered]
    figure.add_trace(
        go.Bar(
            y=bars,
            x=ttft,
            base=starts,
            orientation="h",
            name="until first token",
            marker_color="#f2a541",
        )
    )
    figure.add_trace(
        go.Bar(
            y=bars,
            x=decode,
            base=[s + t for s, t in zip(starts, ttft)],
            orientation="h",
            name="streaming",
            marker_color="#3a86ff",
        )
    )
    if any(failed):
        figure.add_trace(
            go.Bar(
                y=bars,
                x=failed,
                base=starts,
                orientation="h",
                name="failed",
                marker_color="#d62828",
                text=[r.error_class or "" for r in ordered],
            )
        )
    figure.update_layout(
        barmode="overlay",
        height=max(300, min(1600, 14 * len(ordered) + 120)),
        margin={"t": 40, "b": 40},
        title="Requests over time",
        xaxis_title=_time_axis(offsets),
        yaxis={"autorange": "reversed", "showticklabels": len(ordered) <= 60},
        uirevision="constant",
    )
    return figure


def engine_metrics_figure(
    run_id: int, summary: BenchSummary | dict[str, Any], records: list[RequestRecord]
) -> go.Figure | None:
    """Engine KV-cache usage and running requests on the same clock as client TTFT and E2E."""
    from services.telemetry.query import load_window

    window = load_window(run_id=run_id)
    frame = window.frame
    if not len(frame):
        return None
    starts = BenchSummary.from_json(summary).start_times()
    figure = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=(
            "Client latency per request (ms)",
            "Engine KV-cache usage",
            "Engine requests running / waiting",
        ),
    )
    for name, group in _by_engine(records).items():
        done = [r for r in group if r.ok and r.start_s is not None and r.ttft_s is not None]
        times = [_wall(starts, name, r) for r in done]
        keep = [(t, r) for t, r in zip(times, done) if t is not None]
        figure.add_trace(
            go.Scattergl(
                x=[t for t, _ in keep],
                y=[(r.ttft_s or 0) * 1000 for _, r in keep],
                mode="markers",
                marker={"size": 4},
                name=f"{name} TTFT",
            ),
            row=1,
            col=1,
        )
        figure.add_trace(
            go.Scattergl(
                x=[t for t, _ in keep],
                y=[(r.e2e_s or 0) * 1000 for _, r in keep],
                mode="markers",
                marker={"size": 4, "symbol": "x"},
                name=f"{name} E2E",
            ),
            row=1,
            col=1,
        )
    without_kv = []
    for source in window.sources:
        if not source.startswith("engine:"):
            continue
        part = window.source_frame(source)
        name = source.split(":", 1)[1]
        when = [datetime.fromtimestamp(t, UTC) for t in part["ts"]]
        if "kv_cache_usage" in part and part["kv_cache_usage"].notna().any():
            # A percentage, as on the Monitor and in the results table.
            figure.add_trace(
                go.Scatter(
                    x=when, y=part["kv_cache_usage"] * 100, mode="lines", name=f"{name} KV-cache usage %"
                ),
                row=2,
                col=1,
            )
        else:
            without_kv.append(name)
        for column, words in (("requests_running", "running"), ("requests_waiting", "waiting")):
            if column in part and part[column].notna().any():
                figure.add_trace(
                    go.Scatter(x=when, y=part[column], mode="lines", name=f"{name} {words}"),
                    row=3,
                    col=1,
                )
    if without_kv:
        # An empty panel would read as "zero": say who does not report it.
        low, high = figure.layout.yaxis2.domain  # the middle panel, in page coordinates
        figure.add_annotation(
            text=f"not reported by {', '.join(without_kv)}",
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=(low + high) / 2,
            font={"color": "#6b7280"},
        )
    figure.update_yaxes(title_text="ms", row=1, col=1)
    figure.update_yaxes(title_text="%", rangemode="tozero", row=2, col=1)
    figure.update_yaxes(title_text="requests", rangemode="tozero", row=3, col=1)
    figure.update_layout(height=620, margin={"t": 40, "b": 40}, uirevision="constant")
    return figure


def _wall(
    starts: dict[tuple[str, int | None], float], engine: str, record: RequestRecord
) -> datetime | None:
    base = starts.get((engine, record.step))
    if base is None or record.start_s is None:
        return None
    return datetime.fromtimestamp(base + record.start_s, UTC)
