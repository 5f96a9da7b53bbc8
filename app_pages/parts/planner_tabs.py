"""The Planner's other tabs: engines side by side and ranked, the launch command, and the
model and GPU presets (with one's own added)."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from services.errors import ShootoutError
from services.planner import PlanRequest, catalog, engines_reference, launch, view
from services.safe_text import md_line, md_text


def engines_tab() -> None:
    st.subheader("Feature matrix")
    st.dataframe(view.feature_matrix(), key="planner_matrix")
    with st.expander("Every cell with its source"):
        st.dataframe(
            view.feature_sources(),
            hide_index=True,
            column_config={"source": st.column_config.LinkColumn("source")},
            key="planner_sources",
        )
    st.subheader("Which engine?")
    with st.form("planner_decide"):
        c1, c2, c3 = st.columns(3)
        hardware = c1.selectbox(
            "Hardware",
            view.HARDWARE,
            key="planner_hw",
        )
        gpus = c2.number_input("GPUs per replica", 1, 1024, 1, key="planner_gpus")
        traffic = c3.selectbox(
            "Traffic",
            view.TRAFFIC,
            index=1,
            key="planner_traffic",
        )
        c1, c2, c3, c4 = st.columns(4)
        sharing = c1.selectbox("Shared prefixes", view.PREFIX_SHARING, index=1, key="planner_prefix")
        structured = c2.checkbox("Structured output (JSON schema)", key="planner_structured")
        operations = c3.selectbox("Operations", view.OPERATIONS, index=1, key="planner_ops")
        model_format = c4.selectbox(
            "Model format",
            list(view.MODEL_FORMATS),
            key="planner_format",
            format_func=view.MODEL_FORMATS.__getitem__,
        )
        st.form_submit_button("Rank engines")
    try:
        constraints = view.constraints(
            hardware, int(gpus), traffic, sharing, structured, operations, model_format
        )
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    for ranking in engines_reference.rank_engines(constraints):
        verdict = f"score {ranking.score:+d}" if ranking.supported else "not an option"
        with st.container(border=True):
            place = f"{ranking.place_label}. " if ranking.place else ""
            st.markdown(f"**{place}{ranking.label}** — {verdict}")
            st.markdown("\n".join(f"- {reason}" for reason in ranking.reasons) or "- no rule applies")


def _follow_plan(request: PlanRequest) -> launch.LaunchOptions | None:
    """Set the launch fields to the plan whenever the plan changes.

    Keyed widgets keep their own value across reruns, so a default taken from the plan
    applies only the first time: re-planning Llama 3 70B on 4 GPUs still showed the 8B on
    one. Writing the plan into their state (before they are drawn) makes them follow it;
    the user's edits stand until the next plan.
    """
    try:
        planned = launch.options_for_plan(request)
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


def launch_tab(request: PlanRequest) -> None:
    planned = _follow_plan(request)
    if planned is None:
        return
    engines = launch.launch_engines()
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
    form = view.LaunchForm(
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
        command = view.launch_command(planned, form)
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
        with st.form("planner_register"):
            c1, c2 = st.columns(2)
            suggested = view.suggested_engine_name(command)
            name = c1.text_input("Engine name", suggested, key="planner_register_name")
            url = c2.text_input(
                "Base URL the dashboard will use", command.base_url, key="planner_register_url"
            )
            if st.form_submit_button("Register this endpoint"):
                try:
                    record = launch.register_launched_engine(command, name.strip(), url.strip())
                    st.success(
                        f"Registered {md_line(record.name)} ({md_line(record.kind)}) at {md_line(record.base_url)}."
                    )
                except ShootoutError as error:
                    st.error(md_text(str(error)))


def presets_tab() -> None:
    st.subheader("Models")
    st.dataframe(
        view.model_table(),
        hide_index=True,
        key="planner_models_table",
        column_config={
            "source": st.column_config.LinkColumn("source"),
            "kv_heads": "KV heads",
            "head_dim": "head dim",
            "experts": st.column_config.TextColumn("experts", help="active / routed"),
            "params_b": st.column_config.NumberColumn("params (B)", format="%.2f"),
            "active_b": st.column_config.NumberColumn("active (B)", format="%.2f"),
            "kv_bytes_per_token_bf16": st.column_config.NumberColumn(
                "KV bytes/token (BF16)", format="localized"
            ),
            "max_context": st.column_config.NumberColumn("max context (tokens)", format="localized"),
        },
    )
    st.subheader("GPUs")
    missing = "— : no such tensor path (runs at BF16 speed)"
    st.dataframe(
        view.gpu_table(),
        hide_index=True,
        key="planner_gpus_table",
        column_config={
            "source": st.column_config.LinkColumn("source"),
            "memory_gib": st.column_config.NumberColumn("memory (GiB)", format="%.1f"),
            "bandwidth_gb_s": st.column_config.NumberColumn("bandwidth (GB/s)", format="localized"),
            "bf16_tflops": st.column_config.NumberColumn("BF16 TFLOPS", format="%.1f"),
            "fp8_tflops": st.column_config.TextColumn("FP8 TFLOPS", help=missing),
            "int8_tops": st.column_config.TextColumn("INT8 TOPS", help=missing),
        },
    )
    left, right = st.columns(2)
    with left.form("planner_add_model", clear_on_submit=True):
        st.markdown("**Add a model** from its `config.json` or a GGUF file's header")
        key = st.text_input("Key (as `--model` takes it)", key="planner_new_model_key")
        name = st.text_input("Display name", key="planner_new_model_name")
        hf_id = st.text_input("Hugging Face id (optional)", key="planner_new_model_hf")
        upload = st.file_uploader(
            "config.json or .gguf", type=["json", "gguf"], key="planner_new_model_file"
        )
        path = (
            st.text_input("…or a GGUF path on this server", key="planner_new_model_path")
            if common.viewer().may("read_server_paths")
            else ""
        )
        if st.form_submit_button("Add model"):
            try:
                saved = view.add_model(
                    key=key,
                    name=name,
                    hf_id=hf_id,
                    upload_name=upload.name if upload is not None else None,
                    upload=upload.getvalue() if upload is not None else None,
                    gguf_path=path,
                )
                st.success(
                    f"Saved {md_line(saved.name)} as {md_line(repr(saved.key))}: {saved.layers} layers, "
                    f"{md_line(saved.attention_kind)}."
                )
            except ShootoutError as error:
                st.error(md_text(str(error)))
    with right.form("planner_add_gpu", clear_on_submit=True):
        st.markdown("**Add a GPU**")
        key = st.text_input("Key (as `--gpu` takes it)", key="planner_new_gpu_key")
        name = st.text_input("Display name", key="planner_new_gpu_name")
        c1, c2 = st.columns(2)
        memory_gib = c1.number_input("Memory (GiB)", 0.0, 100_000.0, 80.0, key="planner_new_gpu_mem")
        bandwidth = c2.number_input("Bandwidth (GB/s)", 0.0, 1e6, 2000.0, key="planner_new_gpu_bw")
        bf16 = c1.number_input("Dense BF16 TFLOPS", 0.0, 1e6, 300.0, key="planner_new_gpu_bf16")
        fp8 = c2.number_input("Dense FP8 TFLOPS (0 = none)", 0.0, 1e6, 0.0, key="planner_new_gpu_fp8")
        if st.form_submit_button("Add GPU"):
            try:
                saved_gpu = view.add_gpu(
                    key=key,
                    name=name,
                    memory_gib=memory_gib,
                    bandwidth_gb_s=bandwidth,
                    bf16_tflops=bf16,
                    fp8_tflops=fp8,
                )
                st.success(f"Saved {md_line(saved_gpu.name)} as {md_line(repr(saved_gpu.key))}.")
            except ShootoutError as error:
                st.error(md_text(str(error)))
    custom = view.removable()
    if custom:
        c1, c2 = st.columns([3, 1])
        chosen = c1.selectbox(
            "Remove one of your own",
            custom,
            format_func=lambda x: f"{x[0]}: {x[1]}",
            key="planner_remove",
        )
        if c2.button("Remove", key="planner_remove_button"):
            try:
                catalog.delete_custom(*chosen)
                st.rerun()
            except ShootoutError as error:
                st.error(md_text(str(error)))
