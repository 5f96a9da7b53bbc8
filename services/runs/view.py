"""What the Runs page shows, shaped here so the page only reads widgets and draws.

Three views, each one call: `history_view` (the filtered list, a page at a time),
`run_page_view` (one run) and `compare_page_view` (a comparison). Text that reaches
markdown is escaped here (services.core.safe_text): names, notes and errors are untrusted.

Imported as `services.runs.view`: it uses the run reports (services.runs.reports), which
import services.runs, so the package does not re-export it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

import pandas as pd

from services.bench import selfcheck
from services.bench.caveats import Caveats, run_caveats
from services.bench.explain import exceeds_gap
from services.core import units
from services.core.json_types import JsonOut
from services.core.safe_text import md_line, md_text
from services.demos.summary import DemoSummary
from services.importers import formats as import_formats
from services.importers import import_file
from services.parity.summary import ParitySummary
from services.planner.steps import KINDS_WITH_STEPS
from services.runs import (
    RUN_KINDS,
    FilterOptions,
    RunDetail,
    archive_runs,
    delete_run,
    display,
    filter_options,
    may_change,
    update_run,
    why,
)
from services.runs.detail import get_run
from services.runs.display import ComparisonView
from services.runs.history import list_runs
from services.runs.ranking import ranking_view
from services.runs.records import (
    LATENCY_METRICS,
    RUN_SORTS,
    RunFilter,
    RunListItem,
    RunPage,
    RunSort,
    format_value,
    parse_run_ids,
)
from services.runs.reports import export_comparison, export_filename
from services.runs.tables import settings_table, style_comparison_table
from services.runstate import blind
from services.runstate.lifecycle import RunKind
from services.telemetry.monitor import (
    configured_prometheus_url,
    history_server,
    run_history_view,
    run_timeline_figure,
)

#: What the page reads: this module's own, and what it passes on from the feature's others.
__all__ = [
    "ARCHIVED_CHOICES",
    "CDF_LABELS",
    "HIDDEN_ENGINES",
    "HISTORY_PAGE_SIZE",
    "KINDS_WITH_STEPS",
    "RUN_KINDS",
    "RUN_SORTS",
    "TABLE_ROW_PX",
    "CaveatsShown",
    "ComparabilityShown",
    "ComparePageView",
    "ComparisonView",
    "FilterOptions",
    "HistoryView",
    "RunDetail",
    "RunFilter",
    "RunPageView",
    "RunSort",
    "archive_runs",
    "baseline_caption",
    "blind_answers",
    "cdf_choices",
    "comparability_shown",
    "compare_page_view",
    "compare_with",
    "configured_prometheus_url",
    "delete_question",
    "delete_run",
    "export_comparison",
    "export_filename",
    "filter_options",
    "history_filter",
    "history_server",
    "history_sort",
    "history_table",
    "history_view",
    "id_list",
    "import_file",
    "import_formats",
    "may_change",
    "override_flag",
    "parse_run_ids",
    "ranking_view",
    "run_history_view",
    "run_page_view",
    "run_timeline_figure",
    "settings_shown",
    "style_comparison_table",
    "table_height",
    "tag_list",
    "update_run",
    "verdict_lines",
    "why_evidence",
    "why_lines",
]

HISTORY_PAGE_SIZE = 25
#: st.dataframe's row height: the comparison table shows every row, no inner scroll.
TABLE_ROW_PX = 35
CDF_LABELS = {f"cdf:{metric}": label for metric, label in LATENCY_METRICS.items()}
ARCHIVED_CHOICES = ("hide", "include", "only")


def id_list(run_ids: Iterable[int]) -> str:
    """Run numbers as the address writes them: "12,13"."""
    return ",".join(str(run_id) for run_id in dict.fromkeys(run_ids))


def tag_list(text: str) -> list[str]:
    """Comma-separated tags as typed ("nightly, a100") -> ["nightly", "a100"]."""
    return [tag.strip() for tag in text.split(",") if tag.strip()]


def delete_question(run_ids: Sequence[int]) -> str:
    """The inline confirmation before a delete (nothing goes on the first click)."""
    them = "it" if len(run_ids) == 1 else "them"
    return (
        f"Delete {', '.join('#' + str(i) for i in run_ids)} and every request, answer and sample stored "
        f"with {them}? This cannot be undone; archiving hides a run and keeps it."
    )


# ---------------------------------------------------------------- history


@dataclass(frozen=True)
class HistoryView:
    page: RunPage
    #: the page's runs ready to show, None when there are none (then `empty_message` says why)
    table: pd.DataFrame | None
    empty_message: str | None
    caption: str
    #: run number -> its label in the selection box
    choices: dict[int, str]


def history_filter(
    *,
    kinds: Sequence[str] = (),
    text: str | None = None,
    engine: str | None = None,
    model: str | None = None,
    workload: str | None = None,
    tag: str | None = None,
    since: Any = None,
    until: Any = None,
    archived: str | None = None,
) -> RunFilter:
    """The history filter from the form's values (a cleared date input gives no date)."""
    shown: Literal["hide", "include", "only"] = "hide"
    if archived == "include":
        shown = "include"
    elif archived == "only":
        shown = "only"
    return RunFilter(
        kinds=tuple(kinds),
        engine=engine,
        model=model,
        workload=workload,
        tag=tag,
        since=since if isinstance(since, date) else None,
        until=until if isinstance(until, date) else None,
        text=text or None,
        archived=shown,
    )


def history_sort(choice: str | None) -> RunSort:
    """The list's order from the form's label (or its inner name): newest first unless a
    result is named."""
    if choice in ("output_tok_s", RUN_SORTS["output_tok_s"]):
        return "output_tok_s"
    if choice in ("ttft_p50", RUN_SORTS["ttft_p50"]):
        return "ttft_p50"
    return "newest"


def _sorted_figure(item: RunListItem, sort: RunSort) -> str:
    # Text, not a number column: st.dataframe draws an empty number cell as "None".
    if sort == "output_tok_s":
        value, metric = item.best_output_tok_s, "output_throughput_tok_s"
    else:
        value, metric = item.best_ttft_p50_s, "ttft_s"
    return "–" if value is None else format_value(metric, value)


def history_table(page: RunPage, sort: RunSort = "newest") -> pd.DataFrame:
    """The page's runs; sorted by a result, a column says each run's figure for it."""
    items = page.items
    columns: dict[str, list[Any]] = {
        "Run": [f"#{i.id}" for i in items],
        "Created (UTC)": [i.created_at for i in items],
        "Kind": [i.kind for i in items],
        "Status": [i.status for i in items],
        "Name": [i.name for i in items],
    }
    if sort != "newest":
        columns[RUN_SORTS[sort]] = [_sorted_figure(i, sort) for i in items]
    columns.update(
        {
            "Engines": [", ".join(i.engine_names) for i in items],
            "Model": [i.model or "" for i in items],
            "Workload": [i.workload or "" for i in items],
            "Tags": [", ".join(i.tags) for i in items],
            "Results": [i.headline for i in items],
            "Archived": [i.archived for i in items],
        }
    )
    return pd.DataFrame(columns)


def history_view(filters: RunFilter, page_number: int, sort: RunSort = "newest") -> HistoryView:
    """One page of the history as the page draws it."""
    page = list_runs(filters, page=page_number, page_size=HISTORY_PAGE_SIZE, sort=sort)
    empty = None
    if not page.items:
        empty = (
            "No runs match these filters."
            if page.total == 0 and page_number == 1
            else "No runs on this page."
        )
    label = RUN_SORTS[sort]
    order = "" if sort == "newest" else f" · {label[0].lower()}{label[1:]} first, runs without it last"
    return HistoryView(
        page=page,
        table=history_table(page, sort) if page.items else None,
        empty_message=empty,
        caption=f"{page.total:,} runs match · page {page.page} of {page.pages}{order}",
        choices={
            item.id: f"#{item.id} {item.name or item.kind} ({', '.join(item.engine_names) or '-'})"
            for item in page.items
        },
    )


# ---------------------------------------------------------------- results (one run or several)


def cdf_choices(view: display.ComparisonView) -> list[str]:
    """The distribution figures the view holds, in the order of the latency metrics."""
    return [name for name in view.figures if name in CDF_LABELS]


def table_height(view: display.ComparisonView) -> int:
    return TABLE_ROW_PX * (len(view.table) + 1) + 3


def baseline_caption(view: display.ComparisonView) -> str | None:
    comparison = view.comparison
    if len(comparison.series) < 2:
        return None
    return (
        f"Changes are against the baseline, {md_line(comparison.baseline_series.label)}; "
        "green is better, red worse."
    )


def verdict_lines(view: display.ComparisonView) -> str:
    return "\n".join(f"- {md_line(verdict.text)}" for verdict in view.comparison.verdicts)


def why_lines(view: display.ComparisonView) -> str:
    """Why each winner won (or why that is not said), one item per gap, under the verdicts."""
    return "\n".join(
        f"- **{md_line(names)}**: {md_line(text)}" for names, text in why.grouped(view.explanations)
    )


def why_evidence(view: display.ComparisonView) -> pd.DataFrame:
    """The evidence behind each claim: its cause, share of the gap, the engine's own source and
    coverage (the table under the Why box)."""
    rows = [
        {
            "Figure": why.WHY_METRICS.get(found.metric, found.metric),
            "Cause": claim.cause.replace("_", " "),
            # A part larger than the net gap (others went the other way) reads as the sentence does.
            "Share of the gap": "more than the whole gap"
            if exceeds_gap(claim.share)
            else units.share(claim.share),
            "Engine's own source": claim.metric,
            "Coverage": claim.coverage,
        }
        for found in view.explanations
        for claim in found.claims
    ]
    return pd.DataFrame(
        rows, columns=["Figure", "Cause", "Share of the gap", "Engine's own source", "Coverage"]
    )


def settings_shown(view: display.ComparisonView, only_differences: bool) -> pd.DataFrame:
    """The engines' settings side by side (empty when they report the same)."""
    table = settings_table(view.comparison, only_differences=only_differences)
    return table if table.empty else table.drop(columns=["Differs"])


# ---------------------------------------------------------------- caveats


@dataclass(frozen=True)
class CaveatsShown:
    """A run's caveats as the page draws them, every line markdown-safe."""

    run_id: int
    #: the client-bound warning, None when the generator was not the bottleneck
    warning: str | None
    #: load, warm-up, self-check lines and the engines' notes
    lines: tuple[str, ...]


def _self_check_lines(caveats: Caveats) -> list[str]:
    """The self-check in two lines at most: its verdict and what it means in one, each load's
    raw figures in the other (issue 47: one "Generator self-check:" line per sentence said
    "kept up" three times)."""
    check = caveats.self_check
    verdict = [check.title] if check.state == selfcheck.KEPT_UP else []
    said = " ".join([*verdict, *check.advice_lines])
    lines = [f"Generator self-check: {said}"] if said else []
    if check.evidence_lines:
        lines.append("Self-check evidence: " + "; ".join(check.evidence_lines))
    return lines


def _shown(caveats: Caveats, run_id: int = 0) -> CaveatsShown:
    return CaveatsShown(
        run_id=run_id,
        warning=md_line(caveats.verdict) if caveats.verdict else None,
        lines=tuple(
            md_line(line) for line in (*caveats.load, *_self_check_lines(caveats), *caveats.notes)
        ),
    )


# ---------------------------------------------------------------- one run


@dataclass(frozen=True)
class RunPageView:
    run: display.RunView
    title: str
    caption: str
    #: the other runs of the same setup, when there are any
    repeats_note: str | None
    #: a demo's measured conclusion, a parity run's headline (markdown-safe)
    demo_conclusion: str | None
    parity_headline: str | None
    parity_link: str | None
    has_results: bool
    #: the configuration and summary as stored, for the raw view
    stored: JsonOut
    #: what qualifies the figures: load, warm-up, the self-check, the engines' notes
    caveats: CaveatsShown


#: What a blind exchange's caption says in place of its engines.
HIDDEN_ENGINES = blind.HIDDEN_NOTE


def engines_words(detail: RunDetail) -> str:
    """The run's engines for a caption (markdown-safe): "hidden until revealed" for a blind
    exchange before its reveal."""
    if detail.hidden:
        return HIDDEN_ENGINES
    return md_line(", ".join(detail.engine_names)) or "-"


def blind_answers(table: pd.DataFrame) -> list[tuple[str, str]]:
    """A hidden exchange's answers as the page writes them: a markdown-safe heading per answer
    ("**Answer A** · finished", no timing before the reveal) and its text (markdown-safe)."""
    shown = []
    for row in table.to_dict(orient="records"):
        heading = " · ".join(
            [f"**{md_line(str(row['Answer']))}**", md_line(str(row["Status"]))]
            + ([f"turn {row['Turn']}"] if row["Turn"] != 1 else [])
            + (["failed"] if row["Error"] else [])
        )
        shown.append((heading, md_text(str(row["Text"]))))
    return shown


def run_page_view(run_id: int) -> RunPageView:
    run = display.run_view(run_id)
    detail = run.detail
    summary = detail.summary
    others = [i for i in detail.repeat_ids if i != detail.id]
    demo = DemoSummary.from_json(summary).conclusion if detail.kind == RunKind.DEMO else None
    parity = (
        ParitySummary.from_json(summary).conclusion_headline if detail.kind == RunKind.PARITY else None
    )
    return RunPageView(
        run=run,
        title=f"Run #{detail.id}: {md_line(detail.name or detail.kind)}",
        caption=(
            f"{detail.kind} · {md_line(detail.status)} · {detail.created_at:%Y-%m-%d %H:%M} UTC · engines: "
            f"{engines_words(detail)} · model: {md_line(detail.model) or '-'} · "
            f"workload: {md_line(detail.workload) or '-'}" + (" · archived" if detail.archived else "")
        ),
        repeats_note=(
            f"Repeated runs of this setup: {', '.join('#' + str(i) for i in others)}."
            if len(detail.repeat_ids) > 1
            else None
        ),
        demo_conclusion=md_text(str(demo)) if demo else None,
        parity_headline=md_text(str(parity)) if parity else None,
        parity_link=(
            f"[Open it on the Parity page](/parity?run={detail.id}): the per-prompt table and the word "
            "diff of each divergence."
            if parity
            else None
        ),
        # A demo or parity run that concluded shows its conclusion: that is its result.
        has_results=(
            run.view is not None
            or run.exchanges is not None
            or run.sample_sources is not None
            or bool(demo)
            or bool(parity)
        ),
        stored={"config": detail.config, "summary": detail.summary, "engines": detail.engines},
        caveats=_shown(run.caveats, detail.id),
    )


def compare_with(run_id: int, others: str) -> str:
    """The address value comparing a run with the numbers typed beside it ("14, 15")."""
    return id_list([run_id, *parse_run_ids(others)])


# ---------------------------------------------------------------- a comparison


@dataclass(frozen=True)
class ComparabilityShown:
    """Whether the compared series may be compared, as the page draws it (markdown-safe)."""

    #: "success" (comparable), "error" (not: no winner named) or "warning" (compared anyway)
    level: Literal["success", "error", "warning"]
    title: str
    lines: tuple[str, ...]
    #: Whether to offer "compare anyway" (only when something differs).
    offer_override: bool
    override: bool


def comparability_shown(view: display.ComparisonView) -> ComparabilityShown | None:
    """None for one series (nothing to compare it with)."""
    report = view.comparison.comparability
    if not report.verdicts:
        return None
    level: Literal["success", "error", "warning"] = (
        "success" if report.comparable else "warning" if report.override else "error"
    )
    return ComparabilityShown(
        level=level,
        title=md_line(report.title),
        lines=tuple(md_line(line.strip()) for line in report.lines),
        offer_override=not report.comparable,
        override=report.override,
    )


@dataclass(frozen=True)
class ComparePageView:
    view: display.ComparisonView
    run_ids: list[int]
    title: str
    #: series key -> label, for the baseline choice
    series_labels: dict[str, str]
    links: str
    #: each compared run's caveats (runs without any are left out): runs may differ in load
    caveats: tuple[CaveatsShown, ...] = ()


def override_flag(value: str | None) -> bool:
    """The address's `allow_incomparable` parameter ("1" when the user compares anyway)."""
    return value in ("1", "true", "yes")


def compare_page_view(
    compare: str | Sequence[str], baseline: str | None, allow_incomparable: bool = False
) -> ComparePageView:
    """The comparison an address asks for (`?compare=12,13&baseline=13:vllm`, and
    `&allow_incomparable=1` to name winners across setups that differ)."""
    run_ids = parse_run_ids(compare)
    view = display.comparison_view(run_ids, baseline, allow_incomparable=allow_incomparable)
    comparison = view.comparison
    return ComparePageView(
        view=view,
        run_ids=run_ids,
        title="Compare " + ", ".join(f"#{i}" for i in comparison.run_ids),
        series_labels={series.key: series.label for series in comparison.series},
        links=" · ".join(f"[#{i}](?run={i})" for i in comparison.run_ids),
        caveats=tuple(
            _shown(caveats, run_id)
            for run_id in comparison.run_ids
            for detail in [get_run(run_id)]
            if (caveats := run_caveats(detail.config, detail.results))
        ),
    )
