"""What leaves the server: a run as per-request CSV, run JSON (re-importable) or its HTML
report, and a comparison of runs as one HTML report.

CSV and JSON are streamed in batches (services.runs.reports.streamed); run_document builds the same JSON
in memory, for callers that want a dict and as the reference the stream is checked against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import pandas as pd
from sqlalchemy import select

from db.models import Exchange, RequestResult, Run, Sample
from db.session import session_scope
from services import runs
from services.bench.caveats import run_caveats
from services.core.errors import NotFoundError, ValidationError
from services.core.json_types import JsonOut
from services.importers.shootout import EXCHANGE_FIELDS, FORMAT, SAMPLE_FIELDS, VERSION
from services.planner.steps import KINDS_WITH_STEPS, steps_csv
from services.runs import display
from services.runs.reports.demo import export_demo_html
from services.runs.reports.html_report import (
    HTML_MIME,
    ExportFile,
    caveats_html,
    comparability_html,
    report_html,
    standard_html_report,
    steps_html,
    table_html,
)
from services.runs.reports.markup import fill
from services.runs.reports.streamed import (
    REQUEST_COLUMNS,
    STREAM_FORMATS,
    export_filename,
    refuse_hidden,
    run_header,
    stream_run,
)
from services.runstate.lifecycle import RunKind

ExportFormat = Literal["csv", "json", "html", "steps"]
#: "steps": one CSV row per engine result or sweep step with its cost and energy (small: the
#: run's summary, never its requests).
EXPORT_FORMATS: dict[str, str] = {**STREAM_FORMATS, "html": HTML_MIME, "steps": "text/csv"}
#: The HTML report of a kind whose report tells more than the standard one (a demo's story).
HTML_REPORTS: dict[str, Callable[[int], ExportFile]] = {RunKind.DEMO: export_demo_html}


def _rows_of(
    session: Any, model: Any, columns: Sequence[str], run_id: int, *order: Any
) -> list[JsonOut]:
    """A run's rows of one table as plain dicts of `columns`, in `order`."""
    query = (
        select(*(getattr(model, column) for column in columns))
        .where(model.run_id == run_id)
        .order_by(*order)
    )
    return [dict(zip(columns, row)) for row in session.execute(query)]


def run_document(run_id: int) -> JsonOut:
    """The run as Shootout run JSON (see services.importers.shootout for the format), whole
    in memory: services.runs.reports.streamed.stream_run writes the same document without holding it."""
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


def export_run(run_id: int, fmt: str) -> ExportFile:
    """A run as CSV (per request), JSON (config, summary, engine info, rows), HTML (the
    report of its kind in HTML_REPORTS, else the standard one) or its steps' cost and energy as CSV."""
    if fmt not in EXPORT_FORMATS:
        raise ValidationError(f"Unknown export format {fmt!r}: use {', '.join(EXPORT_FORMATS)}.")
    if fmt == "steps":
        return export_steps(run_id)
    if fmt == "html":
        refuse_hidden(run_id)
        return HTML_REPORTS.get(runs.get_run(run_id).kind, standard_html_report)(run_id)
    # Whole in memory: for small runs and tests; the page and the CLI write the stream.
    data = b"".join(stream_run(run_id, fmt).chunks)
    return ExportFile(filename=export_filename(run_id, fmt), mime=EXPORT_FORMATS[fmt], data=data)


def export_steps(run_id: int) -> ExportFile:
    """The steps CSV: each engine result or sweep step with its cost and energy."""
    refuse_hidden(run_id)
    detail = runs.get_run(run_id)
    if detail.kind not in KINDS_WITH_STEPS:
        raise ValidationError(
            f"Run #{run_id} is a {detail.kind} run: only benchmark, import and tune runs have "
            "steps with a cost and an energy. Export its CSV or JSON instead."
        )
    return ExportFile(
        filename=export_filename(run_id, "csv").replace(".csv", "-steps.csv"),
        mime=EXPORT_FORMATS["steps"],
        data=steps_csv(run_id, detail.kind, detail.summary),
    )


def export_comparison(
    run_ids: Sequence[int], baseline: str | int | None = None, *, allow_incomparable: bool = False
) -> ExportFile:
    """A comparison of runs as one self-contained HTML report (an override to compare setups
    that differ is written in it)."""
    view = display.comparison_view(run_ids, baseline, allow_incomparable=allow_incomparable)
    details = [runs.get_run(run_id) for run_id in view.comparison.run_ids]
    runs_table = table_html(
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
    intro = fill("<h2>Runs</h2>$table", table=runs_table)
    # Each run's figures keep their own caveats: two runs may differ in load or warm-up.
    caveats = [
        caveats_html(run_caveats(d.config, d.results), f"What qualifies #{d.id}") for d in details
    ]
    title = "Shootout comparison: " + ", ".join(f"#{d.id}" for d in details)
    # Each run's steps: how its energy was measured (or why not) is not a row of the table.
    steps = [steps_html(d, f"Cost and energy per step of #{d.id}") for d in details]
    data = report_html(title, [intro, comparability_html(view), *caveats], view, steps).encode("utf-8")
    return ExportFile(
        filename=export_filename(list(view.comparison.run_ids), "html"), mime=HTML_MIME, data=data
    )
