"""Monitor page: live GPU and engine telemetry, a recording switch, and recorded replays."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.common import refresh_interval
from app_pages.parts import monitor_panels
from services.core.errors import ShootoutError
from services.core.safe_text import md_line, md_text
from services.telemetry import view as monitor

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


if mode == "History":
    monitor_panels.history(options, may_fetch)
    st.stop()

if mode == "Recorded":
    monitor_panels.recorded()
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
dcgm_urls = monitor.parse_urls(dcgm_text) if may_fetch else list(options.dcgm_urls)


def toggle_recording() -> None:
    """The switch's callback: start a recording run, or stop the one this session started."""
    st.session_state.pop("monitor_record_error", None)
    if st.session_state["monitor_record"]:
        gpus = st.session_state.get("monitor_gpus") or []
        if not common.viewer().may("record_telemetry"):
            st.session_state["monitor_record_error"] = (
                f"Only an operator may {monitor.describe_action('record_telemetry')} on this server."
            )
            st.session_state["monitor_record"] = False
            return
        dcgm = monitor.parse_urls(st.session_state.get("monitor_dcgm", ""))
        try:
            started = monitor.begin_recording_run(
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
            monitor.stop_recording(run_id)


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
            monitor.stop_recording(info.run_id)
            if st.session_state.get("monitor_recording_run") == info.run_id:
                st.session_state.pop("monitor_recording_run", None)
                st.session_state["monitor_record_reset"] = True
            st.rerun()
    monitor_panels.render(view)


live_panel()
