"""One run: its results, answers, telemetry, Prometheus history, notes and tags, exports."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages import common
from app_pages.parts.runs_actions import back, delete_confirmation, go, set_archived
from app_pages.parts.runs_results import results
from services.core.errors import ShootoutError
from services.core.figures import inert
from services.core.safe_text import md_line, md_text
from services.runs import view as runs
from web.exports import export_path


def _telemetry(run_id: int, sources: pd.DataFrame) -> None:
    st.subheader("Telemetry recorded")
    st.dataframe(sources, hide_index=True, key="runs_samples")
    try:
        figure, notes = runs.run_timeline_figure(run_id)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    if figure is not None:  # nothing to draw: the notes say why, without an empty box
        st.caption(
            "Engine and GPU metrics aligned with each request's latency (seconds since the run started)."
        )
        st.plotly_chart(inert(figure), key="runs_timeline")
    for note in notes:
        st.caption(md_line(note))


def _prometheus_history(run_id: int) -> None:
    """The run's window read back from the team's Prometheus: the engines' own side of a
    benchmark, including one run elsewhere and imported."""
    st.subheader("Engine history from Prometheus")
    url = configured = runs.configured_prometheus_url() or ""
    if common.viewer().may("fetch_urls"):
        url = st.text_input(
            "Prometheus URL",
            value=configured,
            placeholder="http://prometheus:9090",
            key="runs_prometheus_url",
        )
    elif not configured:
        st.caption("The operator has not configured a Prometheus server (SHOOTOUT_PROMETHEUS_URL).")
        return
    if st.button(
        "Engine history from Prometheus",
        key="runs_prometheus_go",
        disabled=not url.strip(),
        help="The engines' KV cache, queues, token rates and latency percentiles over this run's window.",
    ):
        st.session_state["runs_prometheus_for"] = run_id
    if st.session_state.get("runs_prometheus_for") != run_id:
        return
    try:
        view = runs.run_history_view(runs.history_server(url), run_id)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    for message in view.errors:
        st.warning(md_text(message))
    columns = st.columns(2)
    for index, chart in enumerate(view.charts):
        with columns[index % 2]:
            st.plotly_chart(inert(chart.figure), key=chart.key, width="stretch")
            for note in chart.notes:
                st.caption(md_line(note))


def _notes_and_tags(detail: runs.RunDetail) -> None:
    st.subheader("Notes and tags")
    if not runs.may_change(detail.requested_by, common.viewer()):
        st.caption(
            ":material/lock: Someone else started this run: only they or an operator may rename, "
            "annotate, tag or archive it."
        )
    with st.form("runs_meta"):
        name = st.text_input("Name", value=detail.name, key="runs_meta_name")
        notes = st.text_area("Notes", value=detail.notes, key="runs_meta_notes")
        tags = st.multiselect(
            "Tags",
            list(detail.tags),
            default=list(detail.tags),
            accept_new_options=True,
            key="runs_meta_tags",
        )
        if st.form_submit_button("Save"):
            try:
                runs.update_run(detail.id, name=name, notes=notes, tags=tags, viewer=common.viewer())
            except ShootoutError as error:
                st.error(md_text(str(error)))
            else:
                st.toast("Saved.")
                st.rerun()
    other = st.text_input("Compare with runs (numbers, e.g. 14, 15)", key="runs_compare_with")
    if st.button("Compare", key="runs_compare_go", disabled=not other.strip()):
        try:
            go(compare=runs.compare_with(detail.id, other))
        except ShootoutError as error:
            st.error(md_text(str(error)))


def _exports(run_id: int, kind: str) -> None:
    st.subheader("Export")
    # Links to the server's export route (web/exports.py): a download button would build the
    # file in the app's memory first (CSV and JSON are streamed there as they are read).
    formats = {"csv": "Per-request CSV", "json": "Run JSON", "html": "HTML report"}
    if kind in runs.KINDS_WITH_STEPS:
        formats["steps"] = "Steps CSV (cost, energy)"
    for column, (fmt, label) in zip(st.columns(len(formats)), formats.items()):
        column.link_button(label, export_path(run_id, fmt), key=f"runs_export_{fmt}")


def run(run_id: int) -> None:
    back()
    try:
        shown = runs.run_page_view(run_id)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    detail, run = shown.run.detail, shown.run
    st.title(shown.title)
    st.caption(shown.caption)
    if detail.error:
        st.error(md_text(detail.error))
    caveats = shown.caveats
    if caveats.warning or caveats.lines:
        st.subheader("What qualifies these figures")
        if caveats.warning:
            st.warning(caveats.warning)
        if caveats.lines:
            st.caption("\n".join(f"- {line}" for line in caveats.lines))
    if shown.repeats_note:
        st.info(shown.repeats_note)
        if st.button("Compare with its repeats", key="runs_compare_repeats"):
            go(compare=runs.id_list(detail.repeat_ids))
    if run.view is not None:
        results(run.view, "run")
    if run.exchanges is not None and detail.hidden:
        st.subheader("Playground answers")
        st.caption(
            f"A blind exchange: {runs.HIDDEN_ENGINES}. Each answer by its blind name; no "
            "engine's name, timing, table or chart until an operator reveals them."
        )
        for heading, text in runs.blind_answers(run.exchanges):
            with st.container(border=True):
                st.markdown(heading)
                st.markdown(text)
    elif run.exchanges is not None:
        st.subheader("Playground answers")
        st.dataframe(run.exchanges, hide_index=True, key="runs_exchanges")
    if run.votes is not None:
        st.subheader("Blind votes")
        st.caption(run.votes.caption)
        st.dataframe(run.votes.engines, hide_index=True, key="runs_votes")
        if run.votes.pairs is not None:
            st.dataframe(run.votes.pairs, hide_index=True, key="runs_vote_pairs")
    if shown.demo_conclusion:
        st.subheader("Demo conclusion")
        st.success(shown.demo_conclusion)
        st.caption("The Demos page replays it step by step, without the engines.")
    if shown.parity_headline:
        st.subheader("Answer parity")
        st.info(shown.parity_headline)
        st.markdown(shown.parity_link or "")
    if run.sample_sources is not None:
        _telemetry(detail.id, run.sample_sources)
    if not shown.has_results:
        st.info("This run holds no results yet.")
    _prometheus_history(detail.id)
    _notes_and_tags(detail)
    _exports(run_id, detail.kind)
    actions = st.columns(2)
    if actions[0].button("Unarchive" if detail.archived else "Archive", key="runs_run_archive"):
        set_archived([detail.id], not detail.archived)
    if common.viewer().may("delete_runs") and actions[1].button("Delete…", key="runs_run_delete"):
        st.session_state["runs_confirm_delete"] = [detail.id]
    delete_confirmation([detail.id])
    with st.expander("Configuration and stored summary"):
        st.json(shown.stored, expanded=False)
