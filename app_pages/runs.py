"""Runs: the history, one run, and comparisons of runs.

Every view has an address another viewer of the same server can open: `?run=12` (one
run), `?compare=12,13&baseline=13:vllm` (a comparison), and the list's filters (bound to
the query string). Logic lives in services.runs, services.reports and services.importers. Names, notes, labels
and errors are untrusted (imports, engines): they reach markdown only through services.safe_text.
"""

from __future__ import annotations

from datetime import date

import pandas as pd
import streamlit as st

from app_pages import common
from services import importers, reports, runs
from services.errors import ShootoutError
from services.figures import inert
from services.safe_text import md_line, md_text
from services.telemetry import monitor
from web.exports import export_path

PAGE_SIZE = 25
TABLE_ROW_PX = 35  # st.dataframe's row height: the comparison table shows every row, no inner scroll
CDF_LABELS = {f"cdf:{metric}": label for metric, label in runs.LATENCY_METRICS.items()}


def _go(**params: str | None) -> None:
    """Switch view by changing the view parameters of the address (filters stay)."""
    for key in ("run", "compare", "baseline"):
        if key in st.query_params and key not in params:
            del st.query_params[key]
    for key, value in params.items():
        if value is None:
            st.query_params.pop(key, None)
        else:
            st.query_params[key] = value
    st.session_state.pop("runs_confirm_delete", None)
    st.rerun()


def _delete_confirmation(run_ids: list[int]) -> None:
    """Inline confirmation: nothing is deleted on the first click."""
    if st.session_state.get("runs_confirm_delete") != run_ids:
        return
    st.warning(
        f"Delete {', '.join('#' + str(i) for i in run_ids)} and every request, answer and sample stored with "
        f"{'it' if len(run_ids) == 1 else 'them'}? This cannot be undone; archiving hides a run and keeps it."
    )
    yes, no = st.columns(2)
    if yes.button("Yes, delete for good", type="primary", key="runs_delete_yes"):
        try:
            for run_id in run_ids:
                runs.delete_run(run_id)
        except ShootoutError as error:
            st.error(md_text(str(error)))
            return
        st.session_state.pop("runs_confirm_delete", None)
        st.toast(f"Deleted {len(run_ids)} run(s).")
        _go()
    if no.button("Cancel", key="runs_delete_no"):
        st.session_state.pop("runs_confirm_delete", None)
        st.rerun()


def _import_box() -> None:
    with st.expander("Import results from vLLM, SGLang, AIPerf, GuideLLM or a Shootout export"):
        st.caption("Detected from the content: " + "; ".join(importers.formats().values()) + ".")
        with st.form("runs_import", clear_on_submit=True):
            upload = st.file_uploader(
                "Results file", type=["json", "jsonl", "csv", "txt"], key="runs_import_file"
            )
            engine_name = st.text_input(
                "Engine name (optional; default from the file)", key="runs_import_engine"
            )
            tags = st.text_input("Tags (comma-separated, optional)", key="runs_import_tags")
            submitted = st.form_submit_button("Import")
        if submitted:
            if upload is None:
                st.error("Choose a file first.")
                return
            try:
                # The upload's own file object: the importer reads it as a stream, and refuses
                # one over SHOOTOUT_LIMIT_IMPORT_MB with a message before reading it.
                result = importers.import_file(
                    upload,
                    upload.name,
                    engine_name=engine_name,
                    tags=[t.strip() for t in tags.split(",") if t.strip()],
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


def _history() -> None:
    st.title("Runs")
    if common.viewer().may("import_runs"):
        _import_box()
    try:
        options = runs.filter_options()
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    first, second = st.columns(2), st.columns(4)
    kinds = first[0].multiselect(
        "Kind", runs.RUN_KINDS, key="kind", bind="query-params", on_change=_first_page
    )
    text = first[1].text_input(
        "Search name and notes", key="q", bind="query-params", on_change=_first_page
    )
    engine = second[0].selectbox(
        "Engine", options.engines, index=None, key="engine", bind="query-params", on_change=_first_page
    )
    model = second[1].selectbox(
        "Model", options.models, index=None, key="model", bind="query-params", on_change=_first_page
    )
    workload = second[2].selectbox(
        "Workload",
        options.workloads,
        index=None,
        key="workload",
        bind="query-params",
        on_change=_first_page,
    )
    tag = second[3].selectbox(
        "Tag", options.tags, index=None, key="tag", bind="query-params", on_change=_first_page
    )
    third = st.columns([1, 1, 2, 1])
    since = third[0].date_input(
        "From", value=None, key="since", bind="query-params", on_change=_first_page
    )
    until = third[1].date_input(
        "To", value=None, key="until", bind="query-params", on_change=_first_page
    )
    archived = third[2].segmented_control(
        "Archived runs",
        ["hide", "include", "only"],
        default="hide",
        key="archived",
        bind="query-params",
        on_change=_first_page,
    )
    page_number = int(
        third[3].number_input("Page", min_value=1, step=1, key="page", bind="query-params")
    )
    filters = runs.RunFilter(
        kinds=tuple(kinds),
        engine=engine,
        model=model,
        workload=workload,
        tag=tag,
        since=since if isinstance(since, date) else None,
        until=until if isinstance(until, date) else None,
        text=text or None,
        archived=archived or "hide",
    )
    try:
        page = runs.list_runs(filters, page=page_number, page_size=PAGE_SIZE)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    if not page.items:
        st.info(
            "No runs match these filters."
            if page.total == 0 and page_number == 1
            else "No runs on this page."
        )
    else:
        frame = pd.DataFrame(
            {
                "Run": [f"#{i.id}" for i in page.items],
                "Created (UTC)": [i.created_at for i in page.items],
                "Kind": [i.kind for i in page.items],
                "Status": [i.status for i in page.items],
                "Name": [i.name for i in page.items],
                "Engines": [", ".join(i.engine_names) for i in page.items],
                "Model": [i.model or "" for i in page.items],
                "Workload": [i.workload or "" for i in page.items],
                "Tags": [", ".join(i.tags) for i in page.items],
                "Results": [i.headline for i in page.items],
                "Archived": [i.archived for i in page.items],
            }
        )
        st.dataframe(
            frame,
            hide_index=True,
            key="runs_table",
            column_config={"Created (UTC)": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")},
        )
    st.caption(f"{page.total:,} runs match · page {page.page} of {page.pages}")
    labels = {
        item.id: f"#{item.id} {item.name or item.kind} ({', '.join(item.engine_names) or '-'})"
        for item in page.items
    }
    chosen = st.multiselect(
        "Select runs on this page", list(labels), format_func=labels.get, key="runs_selected"
    )
    actions = st.columns(5)
    if actions[0].button("Open", disabled=len(chosen) != 1, key="runs_open"):
        _go(run=str(chosen[0]))
    if actions[1].button("Compare", disabled=not chosen, type="primary", key="runs_compare"):
        _go(compare=",".join(str(i) for i in chosen))
    if actions[2].button("Archive", disabled=not chosen, key="runs_archive"):
        _set_archived(chosen, True)
    if actions[3].button("Unarchive", disabled=not chosen, key="runs_unarchive"):
        _set_archived(chosen, False)
    if common.viewer().may("delete_runs") and actions[4].button(
        "Delete…", disabled=not chosen, key="runs_delete"
    ):
        st.session_state["runs_confirm_delete"] = list(chosen)
    if chosen:
        _delete_confirmation(list(chosen))


def _set_archived(run_ids: list[int], archived: bool) -> None:
    try:
        for run_id in run_ids:
            runs.set_archived(run_id, archived)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    st.toast(f"{'Archived' if archived else 'Brought back'} {len(run_ids)} run(s).")
    st.rerun()


def _results(view: reports.ComparisonView, key: str) -> None:
    """Verdicts, the percentile table, CDFs, the latency-throughput curve, settings."""
    comparison = view.comparison
    if comparison.verdicts:
        st.subheader("Verdicts")
        st.markdown("\n".join(f"- {md_line(verdict.text)}" for verdict in comparison.verdicts))
    st.subheader("Percentiles and throughput")
    if len(comparison.series) > 1:
        st.caption(
            f"Changes are against the baseline, {md_line(comparison.baseline_series.label)}; green is better, red worse."
        )
    # The metric names are the row labels: wide enough that "Output throughput" is never cut.
    st.dataframe(
        reports.style_comparison_table(view.table),
        hide_index=True,
        key=f"{key}_table",
        height=TABLE_ROW_PX * (len(view.table) + 1) + 3,
        column_config={"Metric": st.column_config.TextColumn(width=190)},
    )
    cdfs = [name for name in view.figures if name in CDF_LABELS]
    if cdfs:
        st.subheader("Distributions")
        chosen = (
            st.segmented_control(
                "Metric", cdfs, format_func=CDF_LABELS.get, default=cdfs[0], key=f"{key}_cdf"
            )
            or cdfs[0]
        )
        st.plotly_chart(inert(view.figures[chosen]), key=f"{key}_cdf_chart")
    if "latency_throughput" in view.figures:
        st.subheader("Latency against throughput")
        st.caption("A load sweep draws a curve; a run at one load is one point.")
        st.plotly_chart(inert(view.figures["latency_throughput"]), key=f"{key}_curve")
    if not view.settings.empty:
        st.subheader("Engine settings")
        only = st.toggle(
            "Only settings that differ", key=f"{key}_only_diff", value=len(comparison.series) > 1
        )
        table = reports.settings_table(comparison, only_differences=only)
        if table.empty:
            st.caption("The engines report the same settings.")
        else:
            st.dataframe(
                table.drop(columns=["Differs"]),
                hide_index=True,
                key=f"{key}_settings",
                column_config={"Setting": st.column_config.TextColumn(width=300)},
            )


def _run(run_id: int) -> None:
    if st.button("← All runs", key="runs_back"):
        _go()
    try:
        run = reports.run_view(run_id)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    detail = run.detail
    st.title(f"Run #{detail.id}: {md_line(detail.name or detail.kind)}")
    st.caption(
        f"{detail.kind} · {md_line(detail.status)} · {detail.created_at:%Y-%m-%d %H:%M} UTC · engines: "
        f"{md_line(', '.join(detail.engine_names)) or '-'} · model: {md_line(detail.model) or '-'} · "
        f"workload: {md_line(detail.workload) or '-'}" + (" · archived" if detail.archived else "")
    )
    if detail.error:
        st.error(md_text(detail.error))
    if len(detail.repeat_ids) > 1:
        others = [i for i in detail.repeat_ids if i != detail.id]
        st.info(f"Repeated runs of this setup: {', '.join('#' + str(i) for i in others)}.")
        if st.button("Compare with its repeats", key="runs_compare_repeats"):
            _go(compare=",".join(str(i) for i in detail.repeat_ids))
    if run.view is not None:
        _results(run.view, "run")
    if run.exchanges is not None:
        st.subheader("Playground answers")
        st.dataframe(run.exchanges, hide_index=True, key="runs_exchanges")
    if detail.kind == "demo" and (run.detail.summary or {}).get("conclusion"):
        st.subheader("Demo conclusion")
        st.success(md_text(str(run.detail.summary["conclusion"])))
        st.caption("The Demos page replays it step by step, without the engines.")
    if detail.kind == "parity" and (run.detail.summary or {}).get("conclusion_headline"):
        st.subheader("Answer parity")
        st.info(md_text(str(run.detail.summary["conclusion_headline"])))
        st.markdown(
            f"[Open it on the Parity page](/parity?run={detail.id}): the per-prompt table and the word diff "
            "of each divergence."
        )
    if run.sample_sources is not None:
        st.subheader("Telemetry recorded")
        st.dataframe(run.sample_sources, hide_index=True, key="runs_samples")
        try:
            figure, notes = monitor.run_timeline_figure(detail.id)
        except ShootoutError as error:
            st.error(md_text(str(error)))
        else:
            st.caption(
                "Engine and GPU metrics aligned with each request's latency (seconds since the run started)."
            )
            st.plotly_chart(inert(figure), key="runs_timeline")
            for note in notes:
                st.caption(md_line(note))
    if run.view is None and run.exchanges is None and run.sample_sources is None:
        st.info("This run holds no results yet.")
    _prometheus_history(detail.id)
    st.subheader("Notes and tags")
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
                runs.update_run(detail.id, name=name, notes=notes, tags=tags)
            except ShootoutError as error:
                st.error(md_text(str(error)))
            else:
                st.toast("Saved.")
                st.rerun()
    other = st.text_input("Compare with runs (numbers, e.g. 14, 15)", key="runs_compare_with")
    if st.button("Compare", key="runs_compare_go", disabled=not other.strip()):
        try:
            ids = [detail.id, *runs.parse_run_ids(other)]
        except ShootoutError as error:
            st.error(md_text(str(error)))
        else:
            _go(compare=",".join(str(i) for i in dict.fromkeys(ids)))
    st.subheader("Export")
    buttons = st.columns(3)
    # CSV and JSON are links to the server's streamed download (web/exports.py): a download
    # button would build the whole file in the app's memory first. The HTML report is one
    # page of summaries and figures (at most 1,000 points a curve), small at any run size.
    for column, fmt, label in zip(buttons, ("csv", "json"), ("Per-request CSV", "Run JSON")):
        column.link_button(label, export_path(run_id, fmt), key=f"runs_export_{fmt}")
    buttons[2].download_button(
        "HTML report",
        data=lambda: reports.export_run(run_id, "html").data,
        file_name=reports.export_filename(run_id, "html"),
        mime=reports.EXPORT_FORMATS["html"],
        on_click="ignore",
        key="runs_export_html",
    )
    actions = st.columns(2)
    if actions[0].button("Unarchive" if detail.archived else "Archive", key="runs_run_archive"):
        _set_archived([detail.id], not detail.archived)
    if common.viewer().may("delete_runs") and actions[1].button("Delete…", key="runs_run_delete"):
        st.session_state["runs_confirm_delete"] = [detail.id]
    _delete_confirmation([detail.id])
    with st.expander("Configuration and stored summary"):
        st.json(
            {"config": detail.config, "summary": detail.summary, "engines": detail.engines},
            expanded=False,
        )


def _prometheus_history(run_id: int) -> None:
    """The run's window read back from the team's Prometheus: the engines' own side of a
    benchmark, including one run elsewhere and imported."""
    st.subheader("Engine history from Prometheus")
    configured = monitor.configured_prometheus_url() or ""
    may_fetch = common.viewer().may("fetch_urls")
    url = configured
    if may_fetch:
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
        view = monitor.run_history_view(monitor.history_server(url), run_id)
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


def _compare(text: str) -> None:
    if st.button("← All runs", key="runs_back"):
        _go()
    try:
        run_ids = runs.parse_run_ids(st.query_params.get_all("compare") or text)
        view = reports.comparison_view(run_ids, st.query_params.get("baseline"))
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    comparison = view.comparison
    st.title("Compare " + ", ".join(f"#{i}" for i in comparison.run_ids))
    st.caption("This page's address opens the same comparison for anyone on this server.")
    keys = [series.key for series in comparison.series]
    labels = {series.key: series.label for series in comparison.series}
    if len(keys) > 1:
        baseline = st.selectbox(
            "Baseline", keys, index=comparison.baseline, format_func=labels.get, key="runs_baseline"
        )
        if baseline != comparison.baseline_series.key:
            _go(compare=",".join(str(i) for i in comparison.run_ids), baseline=baseline)
    _results(view, "compare")
    st.download_button(
        "HTML report of this comparison",
        data=lambda: reports.export_comparison(run_ids, comparison.baseline_series.key).data,
        file_name=reports.export_filename(list(comparison.run_ids), "html"),
        mime="text/html",
        on_click="ignore",
        key="runs_export_compare",
    )
    links = " · ".join(f"[#{i}](?run={i})" for i in comparison.run_ids)
    st.caption(f"Open one run: {links}")


if "compare" in st.query_params:
    _compare(st.query_params.get("compare", ""))
elif "run" in st.query_params:
    try:
        _run(runs.parse_run_ids(st.query_params.get("run", ""))[0])
    except (ShootoutError, IndexError):
        st.error(f"{md_line(repr(st.query_params.get('run')))} is not a run number.")
        if st.button("← All runs", key="runs_back_bad"):
            _go()
else:
    _history()
