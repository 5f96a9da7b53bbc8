"""A run's charts (plotly figures): live progress, latency CDFs, the sweep's latency
against throughput, requests in flight, the per-request timeline, engine metrics."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from services.bench.results import Distribution, EngineResults
from services.bench.stats import RequestRecord, cdf_points, concurrency_timeline, throughput_series
from services.bench.summary import BenchSummary
from services.bench.view.split import request_words
from services.telemetry.query import load_window

LIVE_POINTS = 2000


def by_engine(records: list[RequestRecord]) -> dict[str, list[RequestRecord]]:
    groups: dict[str, list[RequestRecord]] = {}
    for record in records:
        groups.setdefault(record.engine, []).append(record)
    return groups


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
    for number, (name, group) in enumerate(by_engine(records).items()):
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
    figure.update_yaxes(title_text="ms", rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title_text="tokens/s", rangemode="tozero", row=1, col=2)
    if not any(r.ok and r.start_s is not None and r.ttft_s is not None for r in records):
        # Empty traces get plotly's default -1..4 axes, read as figures: say nothing came yet.
        figure.update_xaxes(range=[0, 10], rangemode="tozero")
        figure.update_yaxes(range=[0, 1], showticklabels=False)
        figure.add_annotation(
            text="No request has succeeded yet." if records else "Waiting for the first answers…",
            x=0.5,
            y=0.5,
            xref="paper",
            yref="paper",
            showarrow=False,
        )
    figure.update_layout(height=340, margin={"t": 40, "b": 40}, uirevision="live")
    return figure


def run_offsets(summary: BenchSummary) -> dict[tuple[str, int | None], float] | None:
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
        # Steps, as the Runs page draws the same CDF: an empirical CDF rises only at a sample.
        figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"shape": "hv"}, name=name))
    _layout(
        figure,
        f"{label} distribution (CDF)",
        f"{label} (ms)",
        "share of tokens" if label == "ITL" else "share of requests",
    )
    # A share stops at 100%: left to autorange, one sample drew the axis to 200% (issue 47).
    figure.update_yaxes(range=[0, 1.0], tickformat=".0%")
    return figure


def sweep_figure(rows: Sequence[EngineResults], dimension: str) -> go.Figure:
    """Latency against throughput, one curve per engine, one point per load level."""
    figure = make_subplots(
        rows=1, cols=2, subplot_titles=("p50 TTFT vs throughput", "p50 TPOT vs throughput")
    )
    engines: dict[str, list[EngineResults]] = {}
    for row in rows:
        engines.setdefault(row.engine or "?", []).append(row)
    for name, steps in engines.items():
        steps = sorted(steps, key=lambda r: _load_level(r, dimension) or 0)
        x = [r.output_throughput_tok_s for r in steps]
        text = [
            f"{dimension} {level:g}" if (level := _load_level(r, dimension)) is not None else ""
            for r in steps
        ]
        for col, medians in ((1, [r.ttft_s for r in steps]), (2, [r.tpot_s for r in steps])):
            y = [_p50_ms(stats) for stats in medians]
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


def _load_level(row: EngineResults, dimension: str) -> float | int | None:
    return row.concurrency if dimension == "concurrency" else row.rate if dimension == "rate" else None


def _p50_ms(stats: Distribution | None) -> float:
    """A step's median in ms; NaN (a gap in the curve) where it has none."""
    return ((stats.p50 if stats is not None else None) or float("nan")) * 1000


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
    # Each request's split by its engine's own times, one hover away.
    words = [request_words(r) if r.ok else "" for r in ordered]
    figure.add_trace(
        go.Bar(
            y=bars,
            x=ttft,
            base=starts,
            orientation="h",
            name="until first token",
            marker_color="#f2a541",
            hovertext=words,
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
            hovertext=words,
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
    run_id: int, summary: BenchSummary, records: list[RequestRecord]
) -> go.Figure | None:
    """Engine KV-cache usage and running requests on the same clock as client TTFT and E2E."""
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
    for name, group in by_engine(records).items():
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
