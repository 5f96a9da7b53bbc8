"""A finished demo as the same self-contained HTML report as every other run, with the
demo's own story placed first: the measured conclusion, then each step's explanation, large
numbers, finding and chart: the HTML report of demo runs (export.HTML_REPORTS)."""

from __future__ import annotations

from services.core.figures import inert
from services.demos.charts import step_figure
from services.demos.runner import demo_view
from services.runs.reports.html_report import ExportFile, standard_html_report
from services.runs.reports.markup import Markup, fill, joined, trusted

_STYLE = (
    "<style>.demo-conclusion{font-size:1.25em;line-height:1.5;padding:12px 16px;border-left:6px solid #1a7f37;"
    "background:rgba(26,127,55,0.08)}.demo-numbers{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0}"
    ".demo-number{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;min-width:180px}"
    ".demo-number b{display:block;font-size:1.6em}.demo-step{margin-top:1.5em}</style>"
)


def demo_section_html(run_id: int) -> Markup:
    """The demo part of the report (HTML fragment; every text escaped, charts made inert)."""
    view = demo_view(run_id)
    parts = [trusted(_STYLE), fill("<h2>Demo: $title</h2>", title=view.title)]
    if view.mechanism:
        parts.append(fill('<p class="small">$mechanism</p>', mechanism=view.mechanism))
    if view.explanation:
        parts.append(fill("<p>$explanation</p>", explanation=view.explanation))
    if view.conclusion:
        lines = joined(fill("<li>$line</li>", line=line) for line in view.conclusion_lines)
        parts.append(
            fill(
                '<div class="demo-conclusion"><b>$headline</b><ul>$lines</ul></div>',
                headline=view.conclusion_headline or view.conclusion,
                lines=lines,
            )
        )
    elif view.error:
        parts.append(fill('<div class="demo-conclusion">$error</div>', error=view.error))
    for step in view.steps:
        parts.append(
            fill(
                '<div class="demo-step"><h3>Step $number: $title <span class="small">($status)</span></h3>',
                number=step.index + 1,
                title=step.title,
                status=step.status,
            )
        )
        parts.append(fill("<p>$explanation</p>", explanation=step.explanation))
        if step.numbers:
            cells = joined(
                fill(
                    '<div class="demo-number">$label<b>$text</b>$delta</div>',
                    label=n.label,
                    text=n.text,
                    delta=n.delta or "",
                )
                for n in step.numbers
            )
            parts.append(fill('<div class="demo-numbers">$cells</div>', cells=cells))
        if step.finding:
            parts.append(fill("<p>$finding</p>", finding=step.finding))
        for error in step.errors:
            parts.append(fill('<p class="small">Error: $error</p>', error=error))
        figure = step_figure(step)
        if figure is not None:
            # Inert: plotly writes the figure's texts JSON-encoded, its links and scripts taken out.
            parts.append(
                trusted(
                    inert(figure).to_html(
                        full_html=False, include_plotlyjs=False, config={"displaylogo": False}
                    )
                )
            )
        parts.append(trusted("</div>"))
    return joined(parts)


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
