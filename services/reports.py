"""What the Runs page shows and what leaves the server: comparison tables, CDF and
latency-throughput figures, engine settings side by side, and exports of a run as
per-request CSV, run JSON (re-importable) or a self-contained HTML report.

CSV and JSON are streamed in batches (services.exports); run_document builds the same JSON
in memory, for callers that want a dict and as the reference the stream is checked against.
The HTML report carries plotly.js inline (the network may be closed where it is opened)
and escapes every piece of user or model text.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.offline
from plotly.subplots import make_subplots
from sqlalchemy import func, select

from db.models import Exchange, RequestResult, Run, Sample
from db.session import session_scope
from services import runs
from services.errors import NotFoundError, ValidationError
from services.exports import REQUEST_COLUMNS, STREAM_FORMATS, export_filename, run_header, stream_run
from services.figures import inert
from services.importers.common import number
from services.importers.shootout import EXCHANGE_FIELDS, FORMAT, SAMPLE_FIELDS, VERSION
from services.runs import LATENCY_METRICS, Comparison, RunDetail, format_value

__all__ = [
    "ComparisonView",
    "ExportFile",
    "RunView",
    "cdf_figure",
    "comparison_table",
    "comparison_view",
    "export_comparison",
    "export_filename",
    "export_run",
    "latency_throughput_figure",
    "run_document",
    "run_view",
    "settings_table",
    "style_comparison_table",
]

ExportFormat = Literal["csv", "json", "html"]
EXPORT_FORMATS: dict[str, str] = {**STREAM_FORMATS, "html": "text/html"}
CDF_POINTS = 1000
#: One colour per series, the same in every figure (plotly's default qualitative palette).
SERIES_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
MARK_COLOURS = {"better": "#1a7f37", "worse": "#cf222e", "same": "#57606a"}


@dataclass
class ComparisonView:
    comparison: Comparison
    table: pd.DataFrame
    figures: dict[str, go.Figure]
    settings: pd.DataFrame


@dataclass
class RunView:
    detail: RunDetail
    view: ComparisonView | None
    exchanges: pd.DataFrame | None
    sample_sources: pd.DataFrame | None


@dataclass(frozen=True)
class ExportFile:
    filename: str
    mime: str
    data: bytes


# ---------------------------------------------------------------- tables


def _change_text(change: float | None, mark: str | None) -> str:
    if mark is None:
        return ""
    if mark == "same":
        return "same"
    if change is None:
        return mark
    if change >= 200:
        # "+21143.8%" reads worse than "212.4×"
        return f"{1 + change / 100:.1f}× {mark}"
    return f"{change:+.1f}% {mark}"


def comparison_table(comparison: Comparison) -> pd.DataFrame:
    """Metric rows; for every series its value, and for all but the baseline the change."""
    base = comparison.baseline
    records = []
    for row in comparison.rows:
        record: dict[str, str] = {"Metric": row.label}
        for index, series in enumerate(comparison.series):
            record[series.label] = format_value(row.metric, row.values[index])
            if index != base:
                record[f"Δ {series.label}"] = _change_text(row.changes[index], row.marks[index])
        records.append(record)
    columns = ["Metric"]
    for index, series in enumerate(comparison.series):
        columns.append(
            series.label + (" (baseline)" if index == base and len(comparison.series) > 1 else "")
        )
        if index != base:
            columns.append(f"Δ {series.label}")
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    frame.columns = columns
    return frame


def _mark_colour(value: Any) -> str:
    text = str(value)
    for mark, colour in MARK_COLOURS.items():
        if text.endswith(mark):
            return f"color: {colour}; font-weight: 600"
    return ""


def style_comparison_table(table: pd.DataFrame) -> Any:
    """Better in green, worse in red (a pandas Styler for st.dataframe and the HTML report)."""
    delta_columns = [column for column in table.columns if str(column).startswith("Δ ")]
    return table.style.map(_mark_colour, subset=delta_columns) if delta_columns else table.style


def settings_table(comparison: Comparison, only_differences: bool = False) -> pd.DataFrame:
    """The engines' reported settings, one row per setting, one column per series."""
    labels = [series.label for series in comparison.series]
    records = []
    for row in comparison.settings:
        if only_differences and not row.differs:
            continue
        records.append(
            {
                "Setting": row.key,
                **dict(zip(labels, (v if v is not None else "—" for v in row.values))),
                "Differs": row.differs,
            }
        )
    return pd.DataFrame.from_records(records, columns=["Setting", *labels, "Differs"])


# ---------------------------------------------------------------- figures


def _cdf_points(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.sort(values[np.isfinite(values)])
    if values.size <= CDF_POINTS:
        return values, np.arange(1, values.size + 1) / values.size
    # Quantiles on an even grid draw the same curve as every point, at a bounded cost.
    shares = np.linspace(0, 1, CDF_POINTS)
    return np.quantile(values, shares), shares


def cdf_figure(comparison: Comparison, metric: str) -> go.Figure | None:
    """Overlaid cumulative distributions of one latency metric (None without samples)."""
    figure = go.Figure()
    for index, series in enumerate(comparison.series):
        values = series.samples.get(metric)
        if values is None or values.size == 0:
            continue
        x, y = _cdf_points(values)
        notes = [
            note
            for note, on in (
                ("all sweep steps", series.multi_step),
                (f"1 in {series.sampled_every} requests", series.sampled_every > 1),
            )
            if on
        ]
        name = series.label + (f" ({', '.join(notes)})" if notes else "")
        figure.add_trace(
            go.Scatter(
                x=x * 1000,
                y=y,
                mode="lines",
                line={"shape": "hv", "color": SERIES_COLOURS[index % len(SERIES_COLOURS)]},
                name=name,
                hovertemplate="%{x:.1f} ms: %{y:.1%} of requests<extra>"
                + html.escape(name)
                + "</extra>",
            )
        )
    if not figure.data:
        return None
    figure.update_layout(
        title=f"{LATENCY_METRICS[metric]}: cumulative distribution",
        xaxis_title=f"{LATENCY_METRICS[metric]} (ms)",
        yaxis_title="share of requests at or below",
        yaxis_tickformat=".0%",
        legend={"orientation": "h", "y": -0.25},
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
        height=380,
    )
    return figure


def _points(series: runs.Series) -> list[dict[str, Any]]:
    steps = series.sweep or [{**series.rates, **series.stats}]
    points = []
    for step in steps:
        throughput = number(step.get("output_throughput_tok_s"))
        if throughput is None:
            continue
        load = []
        if step.get("concurrency") is not None:
            load.append(f"concurrency {step['concurrency']}")
        if step.get("rate") is not None:
            load.append(f"rate {step['rate']}/s")
        points.append(
            {
                "x": throughput,
                "ttft": (step.get("ttft_s") or {}).get("p50")
                if isinstance(step.get("ttft_s"), dict)
                else None,
                "e2e": (step.get("e2e_s") or {}).get("p50")
                if isinstance(step.get("e2e_s"), dict)
                else None,
                "label": ", ".join(load) or "whole run",
            }
        )
    return sorted(points, key=lambda point: point["x"])


def latency_throughput_figure(comparison: Comparison) -> go.Figure | None:
    """Median TTFT and E2E latency against output throughput, one curve per series (a
    sweep draws a curve; a single-load run is one point)."""
    figure = make_subplots(
        rows=1, cols=2, subplot_titles=("TTFT p50 vs output throughput", "E2E p50 vs output throughput")
    )
    drawn = False
    for index, series in enumerate(comparison.series):
        points = _points(series)
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        for column, key in ((1, "ttft"), (2, "e2e")):
            usable = [p for p in points if p[key] is not None]
            if not usable:
                continue
            drawn = True
            figure.add_trace(
                go.Scatter(
                    x=[p["x"] for p in usable],
                    y=[p[key] * 1000 for p in usable],
                    text=[p["label"] for p in usable],
                    mode="lines+markers",
                    name=series.label,
                    legendgroup=series.key,
                    showlegend=column == 1,
                    line={"color": colour},
                    hovertemplate="%{text}<br>%{x:,.1f} tok/s, %{y:.1f} ms<extra>"
                    + html.escape(series.label)
                    + "</extra>",
                ),
                row=1,
                col=column,
            )
    if not drawn:
        return None
    figure.update_xaxes(title_text="output tokens/s")
    figure.update_yaxes(title_text="ms")
    figure.update_layout(
        height=400, legend={"orientation": "h", "y": -0.25}, margin={"l": 60, "r": 20, "t": 50, "b": 40}
    )
    return figure


def _figures(comparison: Comparison) -> dict[str, go.Figure]:
    figures: dict[str, go.Figure] = {}
    for metric in LATENCY_METRICS:
        figure = cdf_figure(comparison, metric)
        if figure is not None:
            figures[f"cdf:{metric}"] = figure
    curve = latency_throughput_figure(comparison)
    if curve is not None:
        figures["latency_throughput"] = curve
    return figures


def _view(comparison: Comparison) -> ComparisonView:
    return ComparisonView(
        comparison=comparison,
        table=comparison_table(comparison),
        figures=_figures(comparison),
        settings=settings_table(comparison),
    )


def comparison_view(run_ids: Sequence[int], baseline: str | int | None = None) -> ComparisonView:
    """Everything the comparison view draws, for the given runs."""
    return _view(runs.compare_runs(run_ids, baseline))


# ---------------------------------------------------------------- one run


def _exchanges(run_id: int) -> pd.DataFrame | None:
    with session_scope() as session:
        rows = session.execute(
            select(
                Exchange.turn,
                Exchange.engine_name,
                Exchange.status,
                Exchange.answer,
                Exchange.metrics,
                Exchange.usage,
                Exchange.finish_reason,
                Exchange.error,
            )
            .where(Exchange.run_id == run_id)
            .order_by(Exchange.turn, Exchange.id)
            .limit(500)
        ).all()
    if not rows:
        return None
    records = []
    for row in rows:
        metrics, usage = row.metrics or {}, row.usage or {}
        answer = row.answer or ""
        records.append(
            {
                "Turn": row.turn,
                "Engine": row.engine_name,
                "Status": row.status,
                "TTFT": format_value("ttft_s", number(metrics.get("ttft_s"))),
                "Output tokens": usage.get("completion_tokens"),
                "Finish": row.finish_reason or "",
                "Answer": answer if len(answer) <= 300 else answer[:299] + "…",
                "Error": row.error or "",
            }
        )
    return pd.DataFrame.from_records(records)


def _sample_sources(run_id: int) -> pd.DataFrame | None:
    with session_scope() as session:
        rows = session.execute(
            select(Sample.source, func.count(Sample.id), func.min(Sample.ts), func.max(Sample.ts))
            .where(Sample.run_id == run_id)
            .group_by(Sample.source)
            .order_by(Sample.source)
        ).all()
        if not rows:
            return None
        signals = {}
        for source, *_ in rows:
            values = session.scalar(
                select(Sample.values).where(Sample.run_id == run_id, Sample.source == source).limit(1)
            )
            # Keys starting with "_" are the store's own (kind, label, error), not signals.
            signals[source] = ", ".join(sorted(k for k in (values or {}) if not k.startswith("_")))[:300]
    return pd.DataFrame.from_records(
        [
            {
                "Source": source,
                "Readings": count,
                "Seconds covered": round((last or 0) - (first or 0), 1),
                "Signals": signals.get(source, ""),
            }
            for source, count, first, last in rows
        ]
    )


def run_view(run_id: int) -> RunView:
    """Everything the single-run view draws: details, its engines compared, exchanges
    (playground) and telemetry sources (recordings)."""
    detail = runs.get_run(run_id)
    comparison = runs.comparison_of_run(detail)
    return RunView(
        detail=detail,
        view=_view(comparison) if comparison is not None else None,
        exchanges=_exchanges(run_id) if detail.exchange_count else None,
        sample_sources=_sample_sources(run_id) if detail.sample_count else None,
    )


# ---------------------------------------------------------------- exports


def _rows_of(
    session: Any, model: Any, columns: Sequence[str], run_id: int, *order: Any
) -> list[dict[str, Any]]:
    """A run's rows of one table as plain dicts of `columns`, in `order`."""
    query = (
        select(*(getattr(model, column) for column in columns))
        .where(model.run_id == run_id)
        .order_by(*order)
    )
    return [dict(zip(columns, row)) for row in session.execute(query)]


def run_document(run_id: int) -> dict[str, Any]:
    """The run as Shootout run JSON (see services.importers.shootout for the format), whole
    in memory: services.exports.stream_run writes the same document without holding it."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
        requests = _rows_of(session, RequestResult, REQUEST_COLUMNS, run_id, RequestResult.id)
        exchanges = _rows_of(session, Exchange, EXCHANGE_FIELDS, run_id, Exchange.id)
        samples = _rows_of(session, Sample, SAMPLE_FIELDS, run_id, Sample.ts, Sample.id)
        return {
            "format": FORMAT,
            "version": VERSION,
            "exported_at": datetime.now(UTC).isoformat(),
            "run": run_header(run),
            "requests": requests,
            "exchanges": exchanges,
            "samples": samples,
        }


_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1200px;color:#1f2328;padding:0 16px}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;font-size:0.9em;margin:8px 0}th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}tr.differs td{background:#fff8c5}
.meta td:first-child{font-weight:600}pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:0.85em;white-space:pre-wrap}
ul.verdicts li{margin:4px 0}.small{color:#57606a;font-size:0.85em}
"""


def _table_html(
    frame: pd.DataFrame, colour_marks: bool = False, differs_column: str | None = None
) -> str:
    columns = [c for c in frame.columns if c != differs_column]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for _, row in frame.iterrows():
        css = ' class="differs"' if differs_column and bool(row[differs_column]) else ""
        cells = []
        for column in columns:
            value = row[column]
            style = _mark_colour(value) if colour_marks and str(column).startswith("Δ ") else ""
            style_attr = f' style="{style}"' if style else ""
            cells.append(f"<td{style_attr}>{html.escape('' if value is None else str(value))}</td>")
        body.append(f"<tr{css}>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure_html(figure: go.Figure) -> str:
    return inert(figure).to_html(
        full_html=False, include_plotlyjs=False, config={"displaylogo": False, "responsive": True}
    )


def _meta_html(detail: RunDetail) -> str:
    rows = [
        ("Kind", detail.kind),
        ("Status", detail.status),
        ("Created", detail.created_at.strftime("%Y-%m-%d %H:%M:%S UTC") if detail.created_at else ""),
        ("Engines", ", ".join(detail.engine_names)),
        ("Model", detail.model or ""),
        ("Workload", detail.workload or ""),
        ("Tags", ", ".join(detail.tags)),
        (
            "Repeated runs of this setup",
            ", ".join(f"#{i}" for i in detail.repeat_ids) if len(detail.repeat_ids) > 1 else "none",
        ),
    ]
    if detail.error:
        rows.append(("Error", detail.error))
    cells = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f'<table class="meta">{cells}</table>'


def _report_html(
    title: str, intro: list[str], view: ComparisonView | None, extra_sections: list[str]
) -> str:
    sections = [f"<h1>{html.escape(title)}</h1>", *intro]
    if view is not None:
        comparison = view.comparison
        if comparison.verdicts:
            items = "".join(f"<li>{html.escape(v.text)}</li>" for v in comparison.verdicts)
            sections.append(f'<h2>Verdicts</h2><ul class="verdicts">{items}</ul>')
        sections.append(
            "<h2>Percentiles and throughput</h2>" + _table_html(view.table, colour_marks=True)
        )
        if len(comparison.series) > 1:
            sections.append(
                f'<p class="small">Changes are against the baseline, {html.escape(comparison.baseline_series.label)}.</p>'
            )
        plots = [_figure_html(figure) for figure in view.figures.values()]
        if plots:
            sections.append("<h2>Distributions and load</h2>" + "".join(plots))
        if not view.settings.empty:
            sections.append(
                '<h2>Engine settings</h2><p class="small">As the engines reported them; rows that differ are highlighted.</p>'
                + _table_html(view.settings, differs_column="Differs")
            )
    sections.extend(extra_sections)
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    sections.append(f'<p class="small">Generated by Shootout on {generated}.</p>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
        f'<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script></head>'
        f"<body>{''.join(sections)}</body></html>"
    )


def _run_html(run_id: int) -> bytes:
    run = run_view(run_id)
    detail = run.detail
    extra = []
    if run.exchanges is not None:
        extra.append("<h2>Playground answers</h2>" + _table_html(run.exchanges))
    if run.sample_sources is not None:
        extra.append("<h2>Telemetry recorded</h2>" + _table_html(run.sample_sources))
    if detail.notes:
        extra.append(f"<h2>Notes</h2><pre>{html.escape(detail.notes)}</pre>")
    extra.append(
        f"<h2>Configuration</h2><pre>{html.escape(json.dumps(detail.config, indent=2, sort_keys=True, default=str))}</pre>"
    )
    title = f"Shootout run #{detail.id}: {detail.name or detail.kind}"
    return _report_html(title, [_meta_html(detail)], run.view, extra).encode("utf-8")


def export_run(run_id: int, fmt: str) -> ExportFile:
    """A run as CSV (per request), JSON (config, summary, engine info, rows) or HTML."""
    if fmt not in EXPORT_FORMATS:
        raise ValidationError(f"Unknown export format {fmt!r}: use csv, json or html.")
    if fmt in STREAM_FORMATS:
        # Whole in memory: for small runs and tests; the page and the CLI write the stream.
        data = b"".join(stream_run(run_id, fmt).chunks)
    else:
        if runs.get_run(run_id).kind == "demo":
            # A demo's report also tells its story: explanation, steps and measured conclusion.
            from services.demos.report import export_demo_html

            return export_demo_html(run_id)
        data = _run_html(run_id)
    return ExportFile(filename=export_filename(run_id, fmt), mime=EXPORT_FORMATS[fmt], data=data)


def standard_html_report(run_id: int) -> ExportFile:
    """The HTML report every run kind shares (a demo adds its own section around it)."""
    return ExportFile(
        filename=export_filename(run_id, "html"), mime=EXPORT_FORMATS["html"], data=_run_html(run_id)
    )


def export_comparison(run_ids: Sequence[int], baseline: str | int | None = None) -> ExportFile:
    """A comparison of runs as one self-contained HTML report."""
    view = comparison_view(run_ids, baseline)
    details = [runs.get_run(run_id) for run_id in view.comparison.run_ids]
    intro = "<h2>Runs</h2>" + _table_html(
        pd.DataFrame.from_records(
            [
                {
                    "Run": f"#{d.id}",
                    "Name": d.name,
                    "Kind": d.kind,
                    "Created": d.created_at.strftime("%Y-%m-%d %H:%M") if d.created_at else "",
                    "Engines": ", ".join(d.engine_names),
                    "Model": d.model or "",
                    "Tags": ", ".join(d.tags),
                }
                for d in details
            ]
        )
    )
    title = "Shootout comparison: " + ", ".join(f"#{d.id}" for d in details)
    data = _report_html(title, [intro], view, []).encode("utf-8")
    return ExportFile(
        filename=export_filename(list(view.comparison.run_ids), "html"), mime="text/html", data=data
    )
