"""Measured results (one run's engines or several runs'): verdicts, the percentile table,
distributions, the latency-throughput curve and engine settings; and the comparison view."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app_pages.parts.runs_actions import back, go
from services.core.errors import ShootoutError
from services.core.figures import inert
from services.core.safe_text import md_line, md_text
from services.runs import view as runs


def results(view: runs.ComparisonView, key: str, override: Callable[[], None] | None = None) -> None:
    comparison = view.comparison
    if _comparability(view) and override is not None:
        override()
    if comparison.verdicts:
        st.subheader("Verdicts")
        st.markdown(runs.verdict_lines(view))
    why = runs.why_lines(view)
    if why:
        # Why each winner won, from the engines' own accounts: it never changes a verdict.
        st.subheader("Why")
        st.markdown(why)
        evidence = runs.why_evidence(view)
        if not evidence.empty:
            with st.expander("The evidence behind each claim"):
                st.dataframe(evidence, hide_index=True, key=f"{key}_why")
    st.subheader("Percentiles and throughput")
    caption = runs.baseline_caption(view)
    if caption:
        st.caption(caption)
    # The metric names are the row labels: wide enough that "Output throughput" is never cut.
    st.dataframe(
        runs.style_comparison_table(view.table),
        hide_index=True,
        key=f"{key}_table",
        height=runs.table_height(view),
        # Pinned: with several runs the last change columns sit past the right edge, and the
        # row names must stay in view while scrolling to them.
        column_config={"Metric": st.column_config.TextColumn(width=190, pinned=True)},
    )
    _where_the_time_went(view, key)
    cdfs = runs.cdf_choices(view)
    if cdfs:
        st.subheader("Distributions")
        labels = runs.CDF_LABELS
        chosen = st.segmented_control(
            "Metric", cdfs, format_func=labels.get, default=cdfs[0], key=f"{key}_cdf"
        )
        st.plotly_chart(inert(view.figures[chosen or cdfs[0]]), key=f"{key}_cdf_chart")
    if "latency_throughput" in view.figures:
        st.subheader("Latency against throughput")
        st.caption("A load sweep draws a curve; a run at one load is one point.")
        st.plotly_chart(inert(view.figures["latency_throughput"]), key=f"{key}_curve")
    if not view.settings.empty:
        st.subheader("Engine settings")
        only = st.toggle(
            "Only settings that differ", key=f"{key}_only_diff", value=len(comparison.series) > 1
        )
        table = runs.settings_shown(view, only_differences=only)
        if table.empty:
            st.caption("The engines report the same settings.")
        else:
            st.dataframe(
                table,
                hide_index=True,
                key=f"{key}_settings",
                column_config={"Setting": st.column_config.TextColumn(width=300)},
            )


def _where_the_time_went(view: runs.ComparisonView, key: str) -> None:
    """Each engine's own queue, prefill and decode beside the rest, as the Benchmarks page
    shows them (one split view, services.bench.view.split)."""
    split = view.split
    if not split.shown:
        return
    st.subheader("Where the time went")
    st.caption(split.note)
    for line in split.lines:
        st.caption(md_line(line))
    if not split.table.empty:
        st.dataframe(split.table, hide_index=True, key=f"{key}_split")
    if split.figure is not None:
        st.plotly_chart(inert(split.figure), key=f"{key}_split_chart")


def _comparability(view: runs.ComparisonView) -> bool:
    """The comparability verdict above the figures; whether the user may override it (only
    when something differs)."""
    verdict = runs.comparability_shown(view)
    if verdict is None:
        return False
    st.subheader("Comparability")
    getattr(st, verdict.level)(verdict.title)
    if verdict.lines:
        st.markdown("\n".join(f"- {line}" for line in verdict.lines))
    return verdict.offer_override


def _override(shown: runs.ComparePageView) -> None:
    """The explicit "compare anyway", kept in the address so that a shared link shows it too."""
    override = shown.view.comparison.comparability.override
    anyway = st.checkbox(
        "Compare anyway: name winners although the setups differ",
        value=override,
        key="runs_allow_incomparable",
    )
    if anyway != override:
        go(
            compare=runs.id_list(shown.run_ids),
            baseline=st.query_params.get("baseline"),
            allow_incomparable="1" if anyway else None,
        )


def compare() -> None:
    back()
    try:
        shown = runs.compare_page_view(
            st.query_params.get_all("compare"),
            st.query_params.get("baseline"),
            runs.override_flag(st.query_params.get("allow_incomparable")),
        )
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    comparison = shown.view.comparison
    st.title(shown.title)
    st.caption("This page's address opens the same comparison for anyone on this server.")
    keys = list(shown.series_labels)
    if len(keys) > 1:
        baseline = st.selectbox(
            "Baseline",
            keys,
            index=comparison.baseline,
            format_func=shown.series_labels.get,
            key="runs_baseline",
        )
        if baseline != comparison.baseline_series.key:
            go(compare=runs.id_list(comparison.run_ids), baseline=baseline)
    results(shown.view, "compare", override=lambda: _override(shown))
    if shown.caveats:
        st.subheader("What qualifies these figures")
        for each in shown.caveats:
            st.markdown(f"**#{each.run_id}**")
            if each.warning:
                st.warning(each.warning)
            if each.lines:
                st.caption("\n".join(f"- {line}" for line in each.lines))
    st.download_button(
        "HTML report of this comparison",
        data=lambda: (
            runs.export_comparison(
                shown.run_ids,
                comparison.baseline_series.key,
                allow_incomparable=comparison.comparability.override,
            ).data
        ),
        file_name=runs.export_filename(list(comparison.run_ids), "html"),
        mime="text/html",
        on_click="ignore",
        key="runs_export_compare",
    )
    st.caption(f"Open one run: {shown.links}")
