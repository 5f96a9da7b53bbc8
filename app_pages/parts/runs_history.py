"""The history: filters bound to the address, one page of runs, and what to do with a selection."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.parts.runs_actions import delete_confirmation, go, set_archived
from app_pages.parts.runs_ranking import ranking
from services.core.errors import ShootoutError
from services.core.safe_text import md_line, md_text
from services.runs import view as runs


def _import_box() -> None:
    with st.expander("Import results from vLLM, SGLang, AIPerf, GuideLLM or a Shootout export"):
        st.caption("Detected from the content: " + "; ".join(runs.import_formats().values()) + ".")
        with st.form("runs_import", clear_on_submit=True, enter_to_submit=False):
            upload = st.file_uploader(
                "Results file", type=["json", "jsonl", "csv", "txt"], key="runs_import_file"
            )
            engine_name = st.text_input(
                "Engine name (optional; default from the file)", key="runs_import_engine"
            )
            tags = st.text_input("Tags (comma-separated, optional)", key="runs_import_tags")
            usd_per_hour = st.text_input(
                "Price, $/hour of what served it (optional; for cost per 1M tokens)",
                key="runs_import_usd_per_hour",
                placeholder="3.50",
            )
            submitted = st.form_submit_button("Import")
        if not submitted:
            return
        if upload is None:
            st.error("Choose a file first.")
            return
        try:
            # The upload's own file object: the importer reads it as a stream, and refuses
            # one over SHOOTOUT_LIMIT_IMPORT_MB with a message before reading it.
            result = runs.import_file(
                upload,
                upload.name,
                engine_name=engine_name,
                tags=runs.tag_list(tags),
                usd_per_hour=usd_per_hour,
            )
        except ShootoutError as error:
            st.error(md_text(str(error)))
            return
        st.success(
            f"Imported {md_line(upload.name)} ({md_line(result.label)}) as run "
            + ", ".join(f"#{i}" for i in result.run_ids)
            + f" with {result.requests} request rows."
        )


def _first_page() -> None:
    st.session_state["page"] = 1


def _filters(options: runs.FilterOptions) -> tuple[runs.RunFilter, runs.RunSort, int]:
    """The filter widgets, each bound to the address; a change goes back to page 1."""
    bound = {"bind": "query-params", "on_change": _first_page}
    first, second, third = st.columns(2), st.columns(4), st.columns([1, 1, 2, 1.3, 1])
    kinds = first[0].multiselect("Kind", runs.RUN_KINDS, key="kind", **bound)
    text = first[1].text_input("Search name and notes", key="q", **bound)
    picks = {
        name: column.selectbox(name.title(), choices, index=None, key=name, **bound)
        for column, name, choices in zip(
            second,
            ("engine", "model", "workload", "tag"),
            (options.engines, options.models, options.workloads, options.tags),
        )
    }
    since = third[0].date_input("From", value=None, key="since", **bound)
    until = third[1].date_input("To", value=None, key="until", **bound)
    archived = third[2].segmented_control(
        "Archived runs", runs.ARCHIVED_CHOICES, default="hide", key="archived", **bound
    )
    # Ordered by the database's pages, not by clicking a column: a click sorts one page only,
    # and a number column would draw a run without the figure as "None".
    # The labels are the options (the address holds "?sort=Best TTFT p50", not an inner name).
    sort = third[3].selectbox("Sort by", list(runs.RUN_SORTS.values()), key="sort", **bound)
    page = third[4].number_input("Page", min_value=1, step=1, key="page", bind="query-params")
    filters = runs.history_filter(
        kinds=kinds, text=text, since=since, until=until, archived=archived, **picks
    )
    return filters, runs.history_sort(sort), int(page)


def history() -> None:
    st.title("Runs")
    if common.viewer().may("import_runs"):
        _import_box()
    try:
        filters, sort, page_number = _filters(runs.filter_options())
        shown = runs.history_view(filters, page_number, sort)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    if shown.table is None:
        st.info(shown.empty_message or "")
    else:
        st.dataframe(
            shown.table,
            hide_index=True,
            key="runs_table",
            column_config={"Created (UTC)": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")},
        )
    st.caption(shown.caption)
    chosen = st.multiselect(
        "Select runs on this page",
        list(shown.choices),
        format_func=shown.choices.get,
        key="runs_selected",
    )
    actions = st.columns(5)
    if actions[0].button("Open", disabled=len(chosen) != 1, key="runs_open"):
        go(run=str(chosen[0]))
    if actions[1].button("Compare", disabled=not chosen, type="primary", key="runs_compare"):
        go(compare=runs.id_list(chosen))
    if actions[2].button("Archive", disabled=not chosen, key="runs_archive"):
        set_archived(chosen, True)
    if actions[3].button("Unarchive", disabled=not chosen, key="runs_unarchive"):
        set_archived(chosen, False)
    if common.viewer().may("delete_runs") and actions[4].button(
        "Delete…", disabled=not chosen, key="runs_delete"
    ):
        st.session_state["runs_confirm_delete"] = list(chosen)
    if chosen:
        delete_confirmation(list(chosen))
    ranking()
