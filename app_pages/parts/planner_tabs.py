"""The Planner's engine tabs: engines side by side and ranked, and the launch command for the
plan (the model and GPU presets are in planner_presets)."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from services.core.errors import ShootoutError
from services.core.safe_text import md_line, md_text
from services.planner import view as planner


def engines_tab() -> None:
    st.subheader("Feature matrix")
    st.dataframe(planner.feature_matrix(), key="planner_matrix")
    with st.expander("Every cell with its source"):
        st.dataframe(
            planner.feature_sources(),
            hide_index=True,
            column_config={"source": st.column_config.LinkColumn("source")},
            key="planner_sources",
        )
    st.subheader("Which engine?")
    with st.form("planner_decide"):
        c1, c2, c3 = st.columns(3)
        hardware = c1.selectbox(
            "Hardware",
            planner.HARDWARE,
            key="planner_hw",
        )
        gpus = c2.number_input("GPUs per replica", 1, 1024, 1, key="planner_gpus")
        traffic = c3.selectbox(
            "Traffic",
            planner.TRAFFIC,
            index=1,
            key="planner_traffic",
        )
        c1, c2, c3, c4 = st.columns(4)
        sharing = c1.selectbox("Shared prefixes", planner.PREFIX_SHARING, index=1, key="planner_prefix")
        structured = c2.checkbox("Structured output (JSON schema)", key="planner_structured")
        operations = c3.selectbox("Operations", planner.OPERATIONS, index=1, key="planner_ops")
        model_format = c4.selectbox(
            "Model format",
            list(planner.MODEL_FORMATS),
            key="planner_format",
            format_func=planner.MODEL_FORMATS.__getitem__,
        )
        st.form_submit_button("Rank engines")
    try:
        constraints = planner.constraints(
            hardware, int(gpus), traffic, sharing, structured, operations, model_format
        )
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    decided = planner.decision(constraints)
    st.markdown(decided.cheapest)
    for card in decided.cards:
        with st.container(border=True):
            st.markdown(card.title)
            st.markdown(card.reasons)
            st.caption(card.measured)
    st.caption(planner.RANKING_NOTE)


def _follow_plan(request: planner.PlanRequest) -> planner.LaunchOptions | None:
    """Set the launch fields to the plan whenever the plan changes.

    Keyed widgets keep their own value across reruns, so a default taken from the plan
    applies only the first time: re-planning Llama 3 70B on 4 GPUs still showed the 8B on
    one. Writing the plan into their state (before they are drawn) makes them follow it;
    the user's edits stand until the next plan.
    """
    try:
        planned = planner.options_for_plan(request)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return None
    state = st.session_state
    if state.get("planner_launch_for") != request:
        state["planner_launch_for"] = request
        state.update(
            {
                "planner_hf": planned.model,
                "planner_launch_gpus": planned.gpus,
                "planner_maxlen": planned.max_model_len,
                "planner_launch_util": planned.gpu_memory_utilization,
                "planner_slots": planned.parallel_slots,
            }
        )
    return planned


def launch_tab(request: planner.PlanRequest) -> None:
    planned = _follow_plan(request)
    if planned is None:
        return
    engines = planner.launch_engines()
    with st.form("planner_launch"):
        c1, c2, c3 = st.columns(3)
        engine = c1.selectbox("Engine", list(engines), format_func=engines.get, key="planner_engine")
        model = c2.text_input("Model (HF id, path, GGUF file or Ollama tag)", key="planner_hf")
        gpus = c3.number_input("GPUs (tensor parallel)", 1, 1024, key="planner_launch_gpus")
        c1, c2, c3, c4 = st.columns(4)
        max_len = c1.number_input("Max model length", 1, 100_000_000, key="planner_maxlen")
        util = c2.slider("GPU memory utilisation", 0.05, 1.0, step=0.01, key="planner_launch_util")
        slots = c3.number_input("Parallel slots (llama.cpp, Ollama)", 1, 4096, key="planner_slots")
        prefix = c4.toggle("Prefix caching", True, key="planner_prefix_cache")
        c1, c2, c3 = st.columns(3)
        port = c1.number_input("Port (0 = engine default)", 0, 65535, 0, key="planner_port")
        host = c2.text_input(
            "Bind host", "127.0.0.1", key="planner_host", help="0.0.0.0 opens it to the network"
        )
        served = c3.text_input("Served model name (optional)", "", key="planner_served")
        st.form_submit_button("Make command", type="primary")
    form = planner.LaunchForm(
        engine=engine or "",
        model=model,
        gpus=int(gpus),
        max_model_len=int(max_len),
        gpu_memory_utilization=float(util),
        parallel_slots=int(slots),
        prefix_caching=prefix,
        port=int(port),
        bind_host=host,
        served_model_name=served,
    )
    try:
        command = planner.launch_command(planned, form)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    plain, docker = st.tabs(["Plain CLI", "Docker"])
    plain.code(command.plain, language="bash")
    docker.code(command.docker, language="bash")
    st.markdown(f"**Metrics:** {md_line(command.metrics)}")
    for note in command.notes:
        st.caption(md_line(note))
    st.caption(f"Flags: {md_line(command.source)}")
    if common.operator_only("manage_engines"):
        with st.form("planner_register", enter_to_submit=False):
            c1, c2 = st.columns(2)
            suggested = planner.suggested_engine_name(command)
            name = c1.text_input("Engine name", suggested, key="planner_register_name")
            url = c2.text_input(
                "Base URL the dashboard will use", command.base_url, key="planner_register_url"
            )
            if st.form_submit_button("Register this endpoint"):
                try:
                    record = planner.register_launched_engine(command, name.strip(), url.strip())
                    st.success(
                        f"Registered {md_line(record.name)} ({md_line(record.kind)}) at {md_line(record.base_url)}."
                    )
                except ShootoutError as error:
                    st.error(md_text(str(error)))
