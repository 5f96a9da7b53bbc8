"""The self-contained HTML report: plotly.js inline (the network may be closed where it is
opened), every piece of user or model text escaped, figures made inert."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go
import plotly.offline

from services.bench.caveats import Caveats
from services.core.figures import inert
from services.planner.steps import steps_frame
from services.runs import RunDetail, display, why
from services.runs.reports.streamed import export_filename
from services.runs.tables import mark_style


@dataclass(frozen=True)
class ExportFile:
    filename: str
    mime: str
    data: bytes


HTML_MIME = "text/html"

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1200px;color:#1f2328;padding:0 16px}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;font-size:0.9em;margin:8px 0}th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}tr.differs td{background:#fff8c5}
.meta td:first-child{font-weight:600}pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:0.85em;white-space:pre-wrap}
ul.verdicts li,ul.caveats li{margin:4px 0}.small{color:#57606a;font-size:0.85em}
p.ok{color:#1a7f37}p.refused{color:#cf222e}p.override{color:#9a6700}
"""


def table_html(
    frame: pd.DataFrame, colour_marks: bool = False, differs_column: str | None = None
) -> str:
    """A frame as an HTML table, every cell escaped; changes coloured by their mark, and rows
    whose `differs_column` is true highlighted (that column itself is not shown)."""
    columns = [c for c in frame.columns if c != differs_column]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for _, row in frame.iterrows():
        css = ' class="differs"' if differs_column and bool(row[differs_column]) else ""
        cells = []
        for column in columns:
            value = row[column]
            style = mark_style(value) if colour_marks and str(column).startswith("Δ ") else ""
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


def caveats_html(caveats: Caveats, heading: str = "What qualifies these figures") -> str:
    """A run's caveats as a section ("" when it has none): the client-bound warning first."""
    if not caveats:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in caveats.lines)
    return f'<h2>{html.escape(heading)}</h2><ul class="caveats">{items}</ul>'


def comparability_html(view: display.ComparisonView) -> str:
    """Whether the compared series may be compared ("" for a single series): the verdict, what
    differs, and an override when the user compared anyway."""
    report = view.comparison.comparability
    if not report.verdicts:
        return ""
    css = "ok" if report.comparable else "override" if report.override else "refused"
    items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in report.lines)
    return f'<h2>Comparability</h2><p class="{css}"><strong>{html.escape(report.title)}</strong></p>' + (
        f'<ul class="caveats">{items}</ul>' if items else ""
    )


def split_html(view: display.ComparisonView) -> str:
    """Where the time went ("" when no series has a split): each engine's own queue, prefill
    and decode and the rest, in words, as percentiles and as the chart the Runs page draws."""
    split = view.split
    if not split.shown:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in split.lines)
    return (
        f'<h2>Where the time went</h2><p class="small">{html.escape(split.note)}</p>'
        f'<ul class="caveats">{items}</ul>'
        + (table_html(split.table) if not split.table.empty else "")
        + (_figure_html(split.figure) if split.figure is not None else "")
    )


def steps_html(detail: RunDetail, heading: str = "Cost and energy per step") -> str:
    """Each step's cost per 1M tokens ("not priced" without a price) and energy (J per output
    token, output tokens per joule, how it was measured or why not); "" for a run without steps."""
    goodput = bool(detail.summary.get("slo"))
    frame = steps_frame(detail.kind, detail.summary, goodput=goodput)
    if frame.empty:
        return ""
    return f"<h2>{html.escape(heading)}</h2>" + table_html(frame)


def report_html(
    title: str, intro: list[str], view: display.ComparisonView | None, extra_sections: list[str]
) -> str:
    """A whole self-contained page: title, intro, the comparison's verdicts, tables and
    figures, then `extra_sections` (HTML fragments the caller escaped)."""
    sections = [f"<h1>{html.escape(title)}</h1>", *intro]
    if view is not None:
        comparison = view.comparison
        if comparison.verdicts:
            items = "".join(f"<li>{html.escape(v.text)}</li>" for v in comparison.verdicts)
            sections.append(f'<h2>Verdicts</h2><ul class="verdicts">{items}</ul>')
        said = [found for found in view.explanations if found.text]
        if said:
            items = "".join(
                f"<li><b>{html.escape(why.WHY_METRICS.get(found.metric, found.metric))}</b>: "
                f"{html.escape(found.text)}</li>"
                for found in said
            )
            sections.append(f'<h2>Why</h2><ul class="why">{items}</ul>')
        sections.append(
            "<h2>Percentiles and throughput</h2>" + table_html(view.table, colour_marks=True)
        )
        if len(comparison.series) > 1:
            sections.append(
                f'<p class="small">Changes are against the baseline, {html.escape(comparison.baseline_series.label)}.</p>'
            )
        sections.append(split_html(view))
        plots = [_figure_html(figure) for figure in view.figures.values()]
        if plots:
            sections.append("<h2>Distributions and load</h2>" + "".join(plots))
        if not view.settings.empty:
            sections.append(
                '<h2>Engine settings</h2><p class="small">As the engines reported them; rows that differ are highlighted.</p>'
                + table_html(view.settings, differs_column="Differs")
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


def run_html(run_id: int) -> bytes:
    """The standard report of one run, as UTF-8 bytes."""
    run = display.run_view(run_id)
    detail = run.detail
    extra = [steps_html(detail)]
    if run.exchanges is not None:
        extra.append("<h2>Playground answers</h2>" + table_html(run.exchanges))
    if run.sample_sources is not None:
        extra.append("<h2>Telemetry recorded</h2>" + table_html(run.sample_sources))
    if detail.notes:
        extra.append(f"<h2>Notes</h2><pre>{html.escape(detail.notes)}</pre>")
    extra.append(
        f"<h2>Configuration</h2><pre>{html.escape(json.dumps(detail.config, indent=2, sort_keys=True, default=str))}</pre>"
    )
    title = f"Shootout run #{detail.id}: {detail.name or detail.kind}"
    shown = comparability_html(run.view) if run.view is not None else ""
    intro = [_meta_html(detail), shown, caveats_html(run.caveats)]
    return report_html(title, intro, run.view, extra).encode("utf-8")


def standard_html_report(run_id: int) -> ExportFile:
    """The HTML report every run kind shares (a demo adds its own section around it)."""
    return ExportFile(filename=export_filename(run_id, "html"), mime=HTML_MIME, data=run_html(run_id))
