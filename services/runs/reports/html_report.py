"""The self-contained HTML report: plotly.js inline (the network may be closed where it is
opened), every piece of user or model text escaped (services/runs/reports/markup.py: a value
reaches the page only through `fill`), figures made inert."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go
import plotly.offline

from services.bench.caveats import Caveats
from services.core.figures import inert
from services.planner.steps import steps_frame
from services.runs import RunDetail, display, why
from services.runs.reports.markup import Markup, fill, joined, trusted
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
) -> Markup:
    """A frame as an HTML table, every cell escaped; changes coloured by their mark, and rows
    whose `differs_column` is true highlighted (that column itself is not shown)."""
    columns = [c for c in frame.columns if c != differs_column]
    head = joined(fill("<th>$name</th>", name=c) for c in columns)
    body = []
    for _, row in frame.iterrows():
        differs = bool(differs_column) and bool(row[differs_column])
        cells = []
        for column in columns:
            value = row[column]
            style = mark_style(value) if colour_marks and str(column).startswith("Δ ") else ""
            shown = "" if value is None else value
            cells.append(
                fill('<td style="$style">$value</td>', style=style, value=shown)
                if style
                else fill("<td>$value</td>", value=shown)
            )
        row_html = '<tr class="differs">$cells</tr>' if differs else "<tr>$cells</tr>"
        body.append(fill(row_html, cells=joined(cells)))
    return fill(
        "<table><thead><tr>$head</tr></thead><tbody>$body</tbody></table>", head=head, body=joined(body)
    )


def _figure_html(figure: go.Figure) -> Markup:
    # Inert: plotly writes the figure's texts JSON-encoded, its links and scripts taken out.
    return trusted(
        inert(figure).to_html(
            full_html=False, include_plotlyjs=False, config={"displaylogo": False, "responsive": True}
        )
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
    cells = joined(fill("<tr><td>$key</td><td>$value</td></tr>", key=k, value=v) for k, v in rows)
    return fill('<table class="meta">$cells</table>', cells=cells)


def caveats_html(caveats: Caveats, heading: str = "What qualifies these figures") -> Markup:
    """A run's caveats as a section ("" when it has none): the client-bound warning first."""
    if not caveats:
        return Markup()
    items = joined(fill("<li>$line</li>", line=line) for line in caveats.lines)
    return fill('<h2>$heading</h2><ul class="caveats">$items</ul>', heading=heading, items=items)


def comparability_html(view: display.ComparisonView) -> Markup:
    """Whether the compared series may be compared ("" for a single series): the verdict, what
    differs, and an override when the user compared anyway."""
    report = view.comparison.comparability
    if not report.verdicts:
        return Markup()
    css = "ok" if report.comparable else "override" if report.override else "refused"
    items = joined(fill("<li>$line</li>", line=line.strip()) for line in report.lines)
    verdict = fill(
        '<h2>Comparability</h2><p class="$css"><strong>$title</strong></p>', css=css, title=report.title
    )
    return joined([verdict, fill('<ul class="caveats">$items</ul>', items=items) if items else Markup()])


def split_html(view: display.ComparisonView) -> Markup:
    """Where the time went ("" when no series has a split): each engine's own queue, prefill
    and decode and the rest, in words, as percentiles and as the chart the Runs page draws."""
    split = view.split
    if not split.shown:
        return Markup()
    items = joined(fill("<li>$line</li>", line=line) for line in split.lines)
    return joined(
        [
            fill(
                '<h2>Where the time went</h2><p class="small">$note</p><ul class="caveats">$items</ul>',
                note=split.note,
                items=items,
            ),
            table_html(split.table) if not split.table.empty else Markup(),
            _figure_html(split.figure) if split.figure is not None else Markup(),
        ]
    )


def steps_html(detail: RunDetail, heading: str = "Cost and energy per step") -> Markup:
    """Each step's cost per 1M tokens ("not priced" without a price) and energy (J per output
    token, output tokens per joule, how it was measured or why not); "" for a run without steps."""
    goodput = bool(detail.results.slo)
    frame = steps_frame(detail.kind, detail.summary, goodput=goodput)
    if frame.empty:
        return Markup()
    return fill("<h2>$heading</h2>$table", heading=heading, table=table_html(frame))


def _comparison_sections(view: display.ComparisonView) -> list[Markup]:
    """The comparison's verdicts, explanations, tables and figures."""
    comparison = view.comparison
    sections = []
    if comparison.verdicts:
        items = joined(fill("<li>$text</li>", text=v.text) for v in comparison.verdicts)
        sections.append(fill('<h2>Verdicts</h2><ul class="verdicts">$items</ul>', items=items))
    said = [found for found in view.explanations if found.text]
    if said:
        items = joined(
            fill(
                "<li><b>$metric</b>: $text</li>",
                metric=why.WHY_METRICS.get(found.metric, found.metric),
                text=found.text,
            )
            for found in said
        )
        sections.append(fill('<h2>Why</h2><ul class="why">$items</ul>', items=items))
    sections.append(
        fill(
            "<h2>Percentiles and throughput</h2>$table",
            table=table_html(view.table, colour_marks=True),
        )
    )
    if len(comparison.series) > 1:
        sections.append(
            fill(
                '<p class="small">Changes are against the baseline, $label.</p>',
                label=comparison.baseline_series.label,
            )
        )
    sections.append(split_html(view))
    plots = [_figure_html(figure) for figure in view.figures.values()]
    if plots:
        sections.append(fill("<h2>Distributions and load</h2>$plots", plots=joined(plots)))
    if not view.settings.empty:
        sections.append(
            fill(
                '<h2>Engine settings</h2><p class="small">As the engines reported them; rows that '
                "differ are highlighted.</p>$table",
                table=table_html(view.settings, differs_column="Differs"),
            )
        )
    return sections


def report_html(
    title: str,
    intro: Sequence[str],
    view: display.ComparisonView | None,
    extra_sections: Sequence[str],
) -> str:
    """A whole self-contained page: title, intro, the comparison's verdicts, tables and
    figures, then `extra_sections`. `intro` and `extra_sections` are HTML fragments (this
    module's, or built the same way: every value through `fill`)."""
    sections = [fill("<h1>$title</h1>", title=title), *map(trusted, intro)]
    if view is not None:
        sections += _comparison_sections(view)
    sections.extend(map(trusted, extra_sections))
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    sections.append(fill('<p class="small">Generated by Shootout on $when.</p>', when=generated))
    return fill(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<title>$title</title><style>$style</style><script type="text/javascript">$plotly</script>'
        "</head><body>$sections</body></html>",
        title=title,
        style=trusted(_STYLE),
        plotly=trusted(plotly.offline.get_plotlyjs()),
        sections=joined(sections),
    )


def run_html(run_id: int) -> bytes:
    """The standard report of one run, as UTF-8 bytes."""
    run = display.run_view(run_id)
    detail = run.detail
    extra = [steps_html(detail)]
    if run.exchanges is not None:
        extra.append(fill("<h2>Playground answers</h2>$table", table=table_html(run.exchanges)))
    if run.sample_sources is not None:
        extra.append(fill("<h2>Telemetry recorded</h2>$table", table=table_html(run.sample_sources)))
    if detail.notes:
        extra.append(fill("<h2>Notes</h2><pre>$notes</pre>", notes=detail.notes))
    configuration = json.dumps(detail.config, indent=2, sort_keys=True, default=str)
    extra.append(fill("<h2>Configuration</h2><pre>$configuration</pre>", configuration=configuration))
    title = f"Shootout run #{detail.id}: {detail.name or detail.kind}"
    shown = comparability_html(run.view) if run.view is not None else ""
    intro = [_meta_html(detail), shown, caveats_html(run.caveats)]
    return report_html(title, intro, run.view, extra).encode("utf-8")


def standard_html_report(run_id: int) -> ExportFile:
    """The HTML report every run kind shares (a demo adds its own section around it)."""
    return ExportFile(filename=export_filename(run_id, "html"), mime=HTML_MIME, data=run_html(run_id))
