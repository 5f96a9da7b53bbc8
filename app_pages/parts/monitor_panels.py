"""The Monitor page's panels: a view's status lines, charts two by two and GPU processes; the
History (Prometheus) and Recorded modes with their controls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import streamlit as st

from services.core.errors import ShootoutError
from services.core.figures import inert
from services.core.safe_text import md_line, md_text
from services.telemetry import view as monitor


def render(view: monitor.MonitorView) -> None:
    """One view, live, recorded or from Prometheus: all three draw the same way."""
    for message in view.errors:
        st.warning(md_text(message))
    if view.statuses:
        status_columns = st.columns(min(len(view.statuses), 4))
        for index, status in enumerate(view.statuses):
            icon = ":material/check_circle:" if status.ok else ":material/cloud_off:"
            status_columns[index % 4].caption(
                f"{icon} **{md_line(status.name)}** ({md_line(status.label)}): {md_line(status.message)}"
            )
    chart_columns = st.columns(2)
    for index, chart in enumerate(view.charts):
        with chart_columns[index % 2]:
            st.plotly_chart(inert(chart.figure), key=chart.key, width="stretch")
            for note in chart.notes:
                st.caption(md_line(note))
    if view.processes:
        st.caption("Processes holding GPU memory")
        st.dataframe(view.processes, hide_index=True, width="stretch")


def history(options: monitor.MonitorOptions, may_fetch: bool) -> None:
    """The History mode: a Prometheus server, a window and engines, then their series."""
    engine_labels = dict(options.engines)
    configured = options.prometheus_url or ""
    left, middle, right = st.columns([3, 3, 2])
    prometheus_url = left.text_input(
        "Prometheus URL",
        value=configured,
        placeholder="http://prometheus:9090",
        key="monitor_prometheus_url",
        disabled=not may_fetch,
        help=None if may_fetch else "The operator sets it (SHOOTOUT_PROMETHEUS_URL).",
    )
    selector = middle.text_input(
        "Label selector",
        value=options.prometheus_selector,
        placeholder='namespace="prod"',
        key="monitor_prometheus_selector",
        disabled=not may_fetch,
        help="Label matchers every query carries."
        if may_fetch
        else "The operator sets it (SHOOTOUT_PROMETHEUS_SELECTOR).",
    )
    if not may_fetch:  # a disabled widget's value still comes from the browser: use the operator's
        prometheus_url, selector = configured, options.prometheus_selector
    window_labels = monitor.history_window_labels()
    window_label = right.selectbox("Window", window_labels, index=1, key="monitor_history_window")
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    if window_label == monitor.CUSTOM_WINDOW:
        dates = st.columns(4)
        start_day = dates[0].date_input(
            "From (UTC)", value=(now - timedelta(hours=1)).date(), key="monitor_history_from_day"
        )
        start_time = dates[1].time_input(
            "at", value=(now - timedelta(hours=1)).time(), key="monitor_history_from_time"
        )
        end_day = dates[2].date_input("To (UTC)", value=now.date(), key="monitor_history_to_day")
        end_time = dates[3].time_input("at ", value=now.time(), key="monitor_history_to_time")
        start_ts, end_ts = monitor.history_span(
            window_label, now, (start_day, start_time), (end_day, end_time)
        )
    else:
        start_ts, end_ts = monitor.history_span(window_label, datetime.now(UTC))
    pick = st.columns([3, 2])
    history_engines = pick[0].multiselect(
        "Registered engines",
        list(engine_labels),
        default=list(engine_labels)[:4],
        format_func=lambda name: f"{name} ({engine_labels[name]})",
        key="monitor_history_engines",
        help="Matched to Prometheus by their scrape target (SHOOTOUT_PROMETHEUS_ENGINES maps the others).",
    )
    job = (
        pick[1].text_input(
            "Or every instance of a scrape job",
            placeholder="vllm",
            key="monitor_history_job",
        )
        if may_fetch
        else ""
    )
    if not prometheus_url.strip():
        st.info(
            "Give the URL of the Prometheus server that scrapes your engines and dcgm-exporter "
            "(or set SHOOTOUT_PROMETHEUS_URL)."
        )
        return
    try:
        server = monitor.history_server(prometheus_url, selector)
        render(monitor.history_view(server, start_ts, end_ts, history_engines, job.strip() or None))
    except ShootoutError as error:
        st.error(md_text(str(error)))


def recorded() -> None:
    """The Recorded mode: one recording run, an hour of it at a time."""
    runs = monitor.recording_runs()
    if not runs:
        st.info(
            "No recordings yet: switch to Live and turn on recording, or run a benchmark "
            "(its engines' metrics are recorded with it)."
        )
        return
    chosen = st.selectbox(
        "Recording",
        runs,
        format_func=lambda r: r.title,
        key="monitor_recorded_run",
    )
    end_key = f"monitor_recorded_end_{chosen.run_id}"
    chosen_end = st.session_state.get(end_key)
    try:
        view = monitor.recorded_view(
            chosen.run_id, end_ts=chosen_end.timestamp() if chosen_end else None
        )
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    if view.span is None:
        st.info("This recording has no samples.")
        return
    first, last = (datetime.fromtimestamp(t, UTC) for t in view.span)
    window = timedelta(seconds=monitor.RECORDED_WINDOW_S)
    if last - first > window:
        st.slider(
            "Hour shown (ends at, UTC)",
            min_value=first + window,
            max_value=last,
            value=datetime.fromtimestamp(view.window[1], UTC) if view.window else last,
            step=timedelta(minutes=5),
            format="YYYY-MM-DD HH:mm",
            key=end_key,
        )
    render(view)
