"""What the Runs page draws, computed once: a comparison's tables and figures, and one run's
details with its exchanges (playground) and telemetry sources (recordings)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from sqlalchemy import func, select

from db.models import Exchange, Sample
from db.session import session_scope
from services import runs
from services.bench import view as bench_views
from services.bench.caveats import Caveats, run_caveats
from services.bench.explain import Explanation
from services.bench.results import EngineResults
from services.bench.summary import BenchSummary
from services.bench.time_split import not_reported
from services.bench.view.split import split_lines, split_words
from services.core.measure import EngineTimes, time_split
from services.core.safe_text import spreadsheet_rows
from services.core.units import number
from services.engines import get_adapter
from services.runs import Comparison, RunDetail, format_value, why
from services.runs.figures import comparison_figures
from services.runs.tables import comparison_table, settings_table
from services.runstate import blind
from services.votes.tally import TallyTables, tally_tables, vote_tally


@dataclass
class ComparisonView:
    comparison: Comparison
    table: pd.DataFrame
    figures: dict[str, go.Figure]
    settings: pd.DataFrame
    #: Where each series' time went, as its engine timed it (the Benchmarks page's split).
    split: bench_views.SplitView = field(default_factory=bench_views.SplitView)
    #: Why each winner won, from the engines' own accounts (services/runs/why.py).
    explanations: list[Explanation] = field(default_factory=list)


@dataclass
class RunView:
    detail: RunDetail
    view: ComparisonView | None
    exchanges: pd.DataFrame | None
    sample_sources: pd.DataFrame | None
    #: What qualifies the figures (load, warm-up, self-check, engines' notes): shown with them.
    caveats: Caveats = field(default_factory=Caveats)
    #: A blind exchange's votes after its reveal (per engine, per pair, intervals); None before.
    votes: TallyTables | None = None


def _split_input(comparison: Comparison) -> tuple[BenchSummary, dict[str, str]]:
    """Each series' stored `time_split` block as one engine of a summary, and its kind in
    words: what the Benchmarks page's split reads."""
    series = comparison.series
    summary = BenchSummary(engines={s.label: EngineResults(time_split=s.time_split) for s in series})
    return summary, {s.label: s.engine_label or s.engine for s in series}


def split_of(comparison: Comparison) -> bench_views.SplitView:
    """Where the time went per series, by the Benchmarks page's own split view."""
    return bench_views.split_view(*_split_input(comparison))


def split_lines_of(comparison: Comparison) -> list[str]:
    """The same in words only, one line per series (the command line's)."""
    return split_lines(*_split_input(comparison))


def view_of(comparison: Comparison) -> ComparisonView:
    """The tables and figures of a comparison already made."""
    return ComparisonView(
        comparison=comparison,
        table=comparison_table(comparison),
        figures=comparison_figures(comparison),
        settings=settings_table(comparison),
        split=split_of(comparison),
        explanations=why.explanations(comparison),
    )


def comparison_view(
    run_ids: Sequence[int], baseline: str | int | None = None, *, allow_incomparable: bool = False
) -> ComparisonView:
    """Everything the comparison view draws, for the given runs."""
    return view_of(runs.compare_runs(run_ids, baseline, allow_incomparable=allow_incomparable))


def _own_times(status: str, metrics: dict[str, object], label: str) -> str:
    """An answer's split as the Playground says it: the engine's own times and the rest, or
    that its engine reported none; nothing for an answer that did not finish."""
    if status != "finished":
        return ""
    engine = EngineTimes.from_json(metrics.get("engine_times"))
    split = time_split(number(metrics.get("ttft_s")), number(metrics.get("e2e_s")), engine)
    return split_words(split) if split is not None else not_reported(label)


def _exchanges(run_id: int, labels: dict[str, str]) -> pd.DataFrame | None:
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
    if blind.is_hidden(run_id):
        return _blind_answers(run_id, rows)
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
                "Engine's own times": _own_times(
                    row.status, metrics, labels.get(row.engine_name, row.engine_name)
                ),
                "Output tokens": usage.get("completion_tokens"),
                "Finish": row.finish_reason or "",
                "Answer": answer if len(answer) <= 300 else answer[:299] + "…",
                "Error": row.error or "",
            }
        )
    # An answer is model text: the table's "Download as CSV" must not carry a formula.
    return pd.DataFrame.from_records(spreadsheet_rows(records))


#: The columns of a hidden exchange's answers: what the Playground shows a voter, no more.
BLIND_COLUMNS = ("Turn", "Answer", "Status", "Text", "Error")


def _blind_answers(run_id: int, rows: Sequence[Any]) -> pd.DataFrame:
    """A blind exchange before its reveal: each answer by its blind name in the stored order,
    with what the Playground shows before the vote and nothing more (issue 56: "names and
    timings appear once you vote"; an answer's TTFT, E2E or token count points at its engine
    as surely as a name; no error text: it may quote an engine or its address)."""
    order = blind.stored_order(run_id, [row.engine_name for row in rows])
    labels = blind.labels(order)
    records = []
    for row in sorted(rows, key=lambda row: (row.turn, order.index(row.engine_name))):
        answer = row.answer or ""
        records.append(
            {
                "Turn": row.turn,
                "Answer": labels[row.engine_name],
                "Status": row.status,
                "Text": answer if len(answer) <= 300 else answer[:299] + "…",
                "Error": "failed" if row.error else "",
            }
        )
    return pd.DataFrame.from_records(records, columns=list(BLIND_COLUMNS))


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


def _kind_labels(detail: RunDetail) -> dict[str, str]:
    """Each engine's kind in words ("vLLM"), by name, from the run's engine snapshots."""
    return {
        str(snapshot["name"]): get_adapter(snapshot.get("kind")).label
        for snapshot in detail.engines
        if snapshot.get("name")
    }


def answers_of(detail: RunDetail) -> pd.DataFrame | None:
    """A Playground run's answers as the run page lists them: before a blind exchange's reveal
    by blind name in the stored order, with no engine and no figure (`BLIND_COLUMNS`); after it
    (or never blind) with its engine and timings. None for a run without answers."""
    if not detail.exchange_count:
        return None
    return _exchanges(detail.id, {} if detail.hidden else _kind_labels(detail))


def run_view(run_id: int) -> RunView:
    """Everything the single-run view draws: details, its engines compared, exchanges
    (playground) and telemetry sources (recordings)."""
    detail = runs.get_run(run_id)
    if detail.hidden:
        # A blind exchange before its reveal (services/runstate/blind.py): its answers by their
        # blind names, no per-engine table, verdict, chart, telemetry or caveat.
        return RunView(detail, None, _exchanges(run_id, {}) if detail.exchange_count else None, None)
    comparison = runs.comparison_of_run(detail)
    blind_sent = detail.kind == blind.PLAYGROUND and blind.sent_blind(detail.config)
    return RunView(
        detail=detail,
        view=view_of(comparison) if comparison is not None else None,
        exchanges=_exchanges(run_id, _kind_labels(detail)) if detail.exchange_count else None,
        sample_sources=_sample_sources(run_id) if detail.sample_count else None,
        caveats=run_caveats(detail.config, detail.results),
        votes=tally_tables(vote_tally(run_id)) if blind_sent else None,
    )
