"""Monitor page: live GPU and engine telemetry, a recording switch, and recorded replays."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import streamlit as st

from app_pages import common
from app_pages.common import refresh_interval
from services import access
from services.errors import ShootoutError
from services.figures import inert
from services.safe_text import md_line, md_text
from services.telemetry import monitor, recorder

st.title("Monitor")
st.caption(
    "GPU memory and utilisation, KV-cache usage, prefix-cache hit rate, queues and token rates, "
    "normalised across engines. A signal an engine does not expose is marked as such, never drawn as zero."
)

try:
    options = monitor.monitor_options()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()

engine_labels = dict(options.engines)
may_fetch = common.viewer().may("fetch_urls")
mode = st.segmented_control(
    "View",
    ["Live", "Recorded", "History"],
    default="Live",
    key="monitor_mode",
    required=True,
    help="History reads the engines' and dcgm-exporter's series from a Prometheus server, for any window.",
)


def render(view: monitor.MonitorView) -> None:
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


if mode == "History":
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
    window_labels = [label for label, _ in monitor.HISTORY_WINDOWS] + ["Custom"]
    window_label = right.selectbox("Window", window_labels, index=1, key="monitor_history_window")
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    if window_label == "Custom":
        dates = st.columns(4)
        start_day = dates[0].date_input(
            "From (UTC)", value=(now - timedelta(hours=1)).date(), key="monitor_history_from_day"
        )
        start_time = dates[1].time_input(
            "at", value=(now - timedelta(hours=1)).time(), key="monitor_history_from_time"
        )
        end_day = dates[2].date_input("To (UTC)", value=now.date(), key="monitor_history_to_day")
        end_time = dates[3].time_input("at ", value=now.time(), key="monitor_history_to_time")
        start_ts = datetime.combine(start_day, start_time, UTC).timestamp()
        end_ts = datetime.combine(end_day, end_time, UTC).timestamp()
    else:
        end_ts = datetime.now(UTC).timestamp()
        start_ts = end_ts - dict(monitor.HISTORY_WINDOWS)[window_label]
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
        st.stop()
    try:
        server = monitor.history_server(prometheus_url, selector)
        render(monitor.history_view(server, start_ts, end_ts, history_engines, job.strip() or None))
    except ShootoutError as error:
        st.error(md_text(str(error)))
    st.stop()

if mode == "Recorded":
    runs = monitor.recording_runs()
    if not runs:
        st.info("No recordings yet: switch to Live and turn on recording.")
        st.stop()
    chosen = st.selectbox(
        "Recording",
        runs,
        format_func=lambda r: f"#{r.run_id} {r.name} ({r.status}; {r.engine_names or 'GPUs only'})",
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
        st.stop()
    if view.span is None:
        st.info("This recording has no samples.")
        st.stop()
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
    st.stop()

top = st.columns([3, 3, 1])
selected_engines = top[0].multiselect(
    "Engines",
    list(engine_labels),
    default=list(engine_labels)[:4],
    format_func=lambda name: f"{name} ({engine_labels[name]})",
    key="monitor_engines",
)
gpu_state = options.gpu_state
if gpu_state.available:
    gpu_titles = {g.source: g.title for g in gpu_state.gpus}
    selected_gpus = top[1].multiselect(
        "GPUs",
        list(gpu_titles),
        default=list(gpu_titles),
        format_func=gpu_titles.get,
        key="monitor_gpus",
    )
else:
    top[1].info(md_line(gpu_state.message), icon=":material/memory:")
    selected_gpus = []
window_s = top[2].selectbox(
    "Window",
    monitor.WINDOW_CHOICES_S,
    index=1,
    format_func=lambda s: f"{s // 60} min",
    key="monitor_window",
)
with st.expander("Remote GPUs (dcgm-exporter)"):
    dcgm_text = st.text_input(
        "dcgm-exporter URLs, comma-separated",
        value=", ".join(options.dcgm_urls),
        placeholder="http://gpu-node-07:9400/metrics",
        key="monitor_dcgm",
        disabled=not may_fetch,
        help=None if may_fetch else "The operator sets them (SHOOTOUT_DCGM_URLS).",
    )
dcgm_urls = (
    [url.strip() for url in dcgm_text.split(",") if url.strip()]
    if may_fetch
    else list(options.dcgm_urls)
)


def toggle_recording() -> None:
    """The switch's callback: start a recording run, or stop the one this session started."""
    st.session_state.pop("monitor_record_error", None)
    if st.session_state["monitor_record"]:
        gpus = st.session_state.get("monitor_gpus") or []
        if not common.viewer().may("record_telemetry"):
            st.session_state["monitor_record_error"] = (
                f"Only an operator may {access.describe('record_telemetry')} on this server."
            )
            st.session_state["monitor_record"] = False
            return
        dcgm = [
            url.strip() for url in st.session_state.get("monitor_dcgm", "").split(",") if url.strip()
        ]
        try:
            started = recorder.begin_recording_run(
                st.session_state.get("monitor_record_name", ""),
                st.session_state.get("monitor_engines") or [],
                gpus=monitor.gpu_indices(gpus) if gpus else False,
                interval_s=1.0,
                dcgm_urls=dcgm,
            )
            st.session_state["monitor_recording_run"] = started.run_id
        except ShootoutError as error:
            st.session_state["monitor_record_error"] = str(error)
            st.session_state["monitor_record"] = False
    else:
        run_id = st.session_state.pop("monitor_recording_run", None)
        if run_id is not None:
            recorder.stop_recording(run_id)


if st.session_state.pop("monitor_record_reset", False):
    st.session_state["monitor_record"] = False  # stopped with the button below
record_columns = st.columns([2, 3, 3], vertical_alignment="bottom")
record_columns[0].toggle(
    "Record to the database",
    key="monitor_record",
    on_change=toggle_recording,
    disabled=not common.viewer().may("record_telemetry"),
)
record_columns[1].text_input(
    "Recording name", placeholder="optional", key="monitor_record_name", label_visibility="collapsed"
)
if st.session_state.get("monitor_record_error"):
    st.error(md_text(st.session_state["monitor_record_error"]))

if not selected_engines and not selected_gpus and not dcgm_urls:
    st.info("Choose engines (register them on the Engines page) or GPUs to watch.")
    st.stop()


@st.fragment(run_every=refresh_interval(1.0))
def live_panel() -> None:
    try:
        view = monitor.live_view(selected_engines, selected_gpus, float(window_s), dcgm_urls)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    for info in view.recordings:
        left, right = st.columns([5, 1], vertical_alignment="center")
        left.caption(
            f":material/radio_button_checked: Recording into run #{info.run_id}: "
            f"{info.samples_written} sample(s) written"
            + (f" · {md_line(info.last_error)}" if info.last_error else "")
        )
        if right.button("Stop", key=f"monitor_stop_{info.run_id}"):
            recorder.stop_recording(info.run_id)
            if st.session_state.get("monitor_recording_run") == info.run_id:
                st.session_state.pop("monitor_recording_run", None)
                st.session_state["monitor_record_reset"] = True
            st.rerun()
    render(view)


live_panel()
