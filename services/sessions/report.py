"""A session's offline HTML report: who, when, the timeline, and what each shown thing held
(a Playground exchange's answers, a run's percentile table), built on the run reports' page
(services/runs/reports/html_report.py: inline styles and plotly.js, every text escaped)."""

from __future__ import annotations

import html

from services import playground
from services.core import units
from services.core.errors import ShootoutError
from services.playground import view as exchange_view
from services.runs.display import run_view
from services.runs.reports.html_report import HTML_MIME, ExportFile, report_html, table_html
from services.runstate import blind
from services.sessions.live import presence
from services.sessions.records import SessionInfo, TimelineEntry
from services.sessions.store import get
from services.sessions.timeline import timeline
from services.votes.tally import tally_tables, vote_tally

TIME = "%Y-%m-%d %H:%M:%S UTC"


def _meta(info: SessionInfo, entries: list[TimelineEntry], joined: int) -> str:
    rows = [
        ("Title", info.title or "untitled"),
        ("Join code", info.join_code),
        ("Started", info.started_at.strftime(TIME)),
        (
            "Ended",
            info.ended_at.strftime(TIME) if info.ended_at else "still live when this report was made",
        ),
        ("Participants who joined", str(joined)),
        ("Things shown", str(sum(1 for e in entries if e.shown.kind != "note"))),
    ]
    cells = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f'<table class="meta">{cells}</table>'


def _timeline(entries: list[TimelineEntry]) -> str:
    if not entries:
        return "<h2>Timeline</h2><p>Nothing was shown.</p>"
    rows = "".join(
        f"<tr><td>{e.seq}</td><td>{html.escape(e.at.strftime('%H:%M:%S'))}</td><td>{html.escape(e.label)}</td></tr>"
        for e in entries
    )
    return f"<h2>Timeline</h2><table><thead><tr><th>#</th><th>UTC</th><th>What</th></tr></thead><tbody>{rows}</tbody></table>"


def _votes(run_id: int, session_id: int) -> str:
    """The room's votes on the exchange (cast in this session), by blind label while hidden."""
    tables = tally_tables(vote_tally(run_id, session_id))
    if tables is None:
        return "<p>No votes in this session.</p>"
    parts = [
        f'<h3>Votes</h3><p class="small">{html.escape(tables.caption)}</p>',
        table_html(tables.engines),
    ]
    if tables.pairs is not None:
        parts.append(table_html(tables.pairs))
    return "".join(parts)


def _exchange(run_id: int) -> str:
    view = playground.get_exchange(run_id)
    arrangement = exchange_view.arrange(view)
    parts = [
        f"<h2>Playground exchange #{run_id}</h2><p><strong>Prompt:</strong></p><pre>{html.escape(view.prompt)}</pre>"
    ]
    for column in arrangement.columns:
        who = arrangement.labels[column.engine] if arrangement.hidden else column.engine
        timing = (
            ""
            if arrangement.hidden or column.ttft_s is None
            else f' <span class="small">TTFT {units.duration(column.ttft_s)}</span>'
        )
        parts.append(f"<h3>{html.escape(who)}{timing}</h3><pre>{html.escape(column.answer)}</pre>")
    return "".join(parts)


def _run(run_id: int) -> str:
    shown = run_view(run_id)
    detail = shown.detail
    head = f"<h2>{html.escape(f'Run #{detail.id}: {detail.name or detail.kind}')}</h2>"
    engines = blind.HIDDEN_NOTE if detail.hidden else ", ".join(detail.engine_names)
    meta = f'<p class="small">{html.escape(f"{detail.kind} · {detail.status} · engines: {engines}")}</p>'
    table = table_html(shown.view.table, colour_marks=True) if shown.view is not None else ""
    if detail.hidden and shown.exchanges is not None:  # its answers by their blind names only
        table = table_html(shown.exchanges)
    return head + meta + table


def _shown_sections(entries: list[TimelineEntry], session_id: int) -> list[str]:
    """Each exchange and run shown, once, in the order first shown; one that was deleted since
    says so instead of failing the report."""
    sections: list[str] = []
    done: set[int] = set()
    for entry in entries:
        kind = entry.shown.kind
        if kind in ("note", "planner"):
            continue
        for run_id in entry.shown.run_ids:
            if run_id in done:
                continue
            done.add(run_id)
            try:
                if kind == "exchange":
                    sections.append(_exchange(run_id) + _votes(run_id, session_id))
                else:
                    sections.append(_run(run_id))
            except ShootoutError as error:
                sections.append(f"<h2>Run #{run_id}</h2><p>{html.escape(str(error))}</p>")
    return sections


def session_report(session_id: int) -> ExportFile:
    info = get(session_id)
    entries = timeline(session_id)
    title = f"Shootout session {info.join_code}" + (f": {info.title}" if info.title else "")
    intro = [_meta(info, entries, presence(session_id).joined), _timeline(entries)]
    data = report_html(title, intro, None, _shown_sections(entries, session_id)).encode("utf-8")
    return ExportFile(filename=f"shootout-session-{session_id}.html", mime=HTML_MIME, data=data)
