"""A finished demo as the same self-contained HTML report as every other run, with the
demo's own story placed first: the measured conclusion, then each step's explanation, large
numbers, finding and chart: the HTML report of demo runs (export.HTML_REPORTS)."""

from __future__ import annotations

import html

from services.core.figures import inert
from services.demos.charts import step_figure
from services.demos.runner import demo_view
from services.runs.reports.html_report import ExportFile, standard_html_report

_STYLE = (
    "<style>.demo-conclusion{font-size:1.25em;line-height:1.5;padding:12px 16px;border-left:6px solid #1a7f37;"
    "background:rgba(26,127,55,0.08)}.demo-numbers{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0}"
    ".demo-number{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;min-width:180px}"
    ".demo-number b{display:block;font-size:1.6em}.demo-step{margin-top:1.5em}</style>"
)


def demo_section_html(run_id: int) -> str:
    """The demo part of the report (HTML fragment; every text escaped, charts made inert)."""
    view = demo_view(run_id)
    parts = [_STYLE, f"<h2>Demo: {html.escape(view.title)}</h2>"]
    if view.mechanism:
        parts.append(f'<p class="small">{html.escape(view.mechanism)}</p>')
    if view.explanation:
        parts.append(f"<p>{html.escape(view.explanation)}</p>")
    if view.conclusion:
        lines = "".join(f"<li>{html.escape(line)}</li>" for line in view.conclusion_lines)
        headline = html.escape(view.conclusion_headline or view.conclusion)
        parts.append(f'<div class="demo-conclusion"><b>{headline}</b><ul>{lines}</ul></div>')
    elif view.error:
        parts.append(f'<div class="demo-conclusion">{html.escape(view.error)}</div>')
    for step in view.steps:
        parts.append(
            f'<div class="demo-step"><h3>Step {step.index + 1}: {html.escape(step.title)} '
            f'<span class="small">({html.escape(step.status)})</span></h3>'
        )
        parts.append(f"<p>{html.escape(step.explanation)}</p>")
        if step.numbers:
            cells = "".join(
                f'<div class="demo-number">{html.escape(n.label)}<b>{html.escape(n.text)}</b>'
                f"{html.escape(n.delta or '')}</div>"
                for n in step.numbers
            )
            parts.append(f'<div class="demo-numbers">{cells}</div>')
        if step.finding:
            parts.append(f"<p>{html.escape(step.finding)}</p>")
        for error in step.errors:
            parts.append(f'<p class="small">Error: {html.escape(error)}</p>')
        figure = step_figure(step)
        if figure is not None:
            parts.append(
                inert(figure).to_html(
                    full_html=False, include_plotlyjs=False, config={"displaylogo": False}
                )
            )
        parts.append("</div>")
    return "".join(parts)


def export_demo_html(run_id: int) -> ExportFile:
    """The run's standard HTML report with the demo section after its title."""
    report = standard_html_report(run_id)
    page = report.data.decode("utf-8")
    marker = "</h1>"
    position = page.find(marker)
    section = demo_section_html(run_id)
    if position < 0:
        page = page.replace("<body>", "<body>" + section, 1)
    else:
        position += len(marker)
        page = page[:position] + section + page[position:]
    return ExportFile(filename=report.filename, mime=report.mime, data=page.encode("utf-8"))
