"""Planner page: will it fit, how fast can it possibly go, which engine, and how to start it."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from app_pages import common
from services.errors import ShootoutError, ValidationError
from services.figures import inert
from services.planner import (
    PlanRequest,
    PlanResult,
    catalog,
    charts,
    engines_reference,
    importers,
    launch,
    list_presets,
    make_plan,
    plan_to_dict,
    runs,
)
from services.planner.plan import gpu_rows, model_rows
from services.planner.specs import GB, GIB, GpuSpec
from services.safe_text import md_line, md_text

NATIVE = "native"

st.title("Planner")
st.caption(
    "KV-cache and weight memory, the roofline ceilings for decode and prefill, the engines side by side, "
    "and the command to start one. Ceilings are upper bounds: real engines reach a fraction of them."
)


def _plan_form(presets: dict) -> PlanRequest:
    state = st.session_state
    state.setdefault(
        "planner_request", PlanRequest(model="llama-3-8b", gpu="h100-sxm", batch=16, context=8192)
    )
    current: PlanRequest = state["planner_request"]
    models, gpus = list(presets["models"]), list(presets["gpus"])
    dtypes = [NATIVE, *presets["dtypes"]]
    with st.form("planner_form"):
        c1, c2, c3, c4 = st.columns(4)
        model = c1.selectbox(
            "Model",
            models,
            index=models.index(current.model) if current.model in models else 0,
            format_func=lambda k: presets["models"][k],
            key="planner_model",
        )
        gpu = c2.selectbox(
            "GPU",
            gpus,
            index=gpus.index(current.gpu) if current.gpu in gpus else 0,
            format_func=lambda k: presets["gpus"][k],
            key="planner_gpu",
        )
        dtype = c3.selectbox(
            "Weights",
            dtypes,
            index=dtypes.index(current.dtype or NATIVE),
            format_func=lambda k: "model's own" if k == NATIVE else presets["dtypes"][k],
            key="planner_dtype",
        )
        kv_keys = list(presets["kv_dtypes"])
        kv_dtype = c4.selectbox(
            "KV cache",
            kv_keys,
            index=kv_keys.index(current.kv_dtype),
            format_func=lambda k: presets["kv_dtypes"][k],
            key="planner_kv",
        )
        c1, c2, c3, c4 = st.columns(4)
        batch = c1.number_input(
            "Batch (sequences)", 1, 1_000_000, current.batch, step=1, key="planner_batch"
        )
        context = c2.number_input(
            "Context (tokens)", 1, 100_000_000, current.context, step=1024, key="planner_context"
        )
        tp = c3.number_input("GPUs (tensor parallel)", 1, 1024, current.tp, step=1, key="planner_tp")
        mem_util = c4.slider(
            "GPU memory utilisation", 0.05, 1.0, current.mem_util, 0.01, key="planner_util"
        )
        c1, c2, c3, _ = st.columns(4)
        block = c1.number_input(
            "KV block size (tokens)", 1, 4096, current.block_size, key="planner_block"
        )
        reserve = c2.number_input(
            "Reserve per GPU (GiB)",
            0.0,
            1024.0,
            current.reserve_gib,
            0.5,
            key="planner_reserve",
            help="activations, CUDA graphs, other processes",
        )
        if st.form_submit_button("Plan", type="primary"):
            state["planner_request"] = PlanRequest(
                model=model,
                gpu=gpu,
                dtype=None if dtype == NATIVE else dtype,
                batch=int(batch),
                context=int(context),
                tp=int(tp),
                kv_dtype=kv_dtype,
                mem_util=float(mem_util),
                block_size=int(block),
                reserve_gib=float(reserve),
            )
    return state["planner_request"]


def _rate(tok_s: float) -> str:
    """Tokens/s short enough for a quarter-width metric: 12,345,678 would be cut to "12,345,6…"."""
    return f"{tok_s / 1e6:,.1f}M tok/s" if tok_s >= 1e6 else f"{tok_s:,.0f} tok/s"


def _show_plan(request: PlanRequest) -> None:
    try:
        plan = make_plan(request)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    for warning in plan.warnings:
        st.warning(md_text(warning))
    fit = plan.fit
    c = st.columns(4)
    # GiB first, as the memory bar, the fit warning and the GPU table use; GB beside it.
    c[0].metric(
        "KV cache per token",
        f"{plan.kv_bytes_per_token:,.0f} B",
        help=f"{plan.model.layers} layers × {plan.model.attention_kind} × {plan.kv.label}",
    )
    c[1].metric(
        "KV cache for the batch",
        f"{plan.kv_total_bytes / GIB:,.1f} GiB",
        f"{plan.kv_total_bytes / GB:,.1f} GB",
        delta_color="off",
        delta_arrow="off",
    )
    c[2].metric(
        "Weights",
        f"{plan.weights.total / GIB:,.1f} GiB",
        f"{plan.weights.total / GB:,.1f} GB · {plan.weights.bits_per_weight:.2f} bits/weight",
        delta_color="off",
        delta_arrow="off",
    )
    c[3].metric(
        "Fits?",
        "yes" if fit.fits else "no",
        f"max {fit.max_sequences:,} sequences at this context",
        delta_color="off",
        delta_arrow="off",
    )
    c = st.columns(4)
    d = plan.decode
    c[0].metric(
        "Decode bound",
        _rate(d.bound_tok_s),
        f"{d.per_sequence_tok_s:,.1f} tok/s per sequence",
        delta_color="off",
        delta_arrow="off",
    )
    # "memory bandwidth" does not fit a quarter-width metric; "bandwidth" says the same.
    c[1].metric(
        "Decode limited by",
        d.limited_by.replace("memory ", ""),
        f"intensity {d.arithmetic_intensity:,.0f} FLOP/B (ridge {plan.roofline.ridge_point:,.0f})",
        delta_color="off",
        delta_arrow="off",
    )
    c[2].metric(
        "Compute-bound from batch",
        f"{plan.crossover_batch:,}" if plan.crossover_batch else "never",
        help="Long contexts keep decode bandwidth-bound: every sequence adds its own KV bytes.",
    )
    c[3].metric(
        "Prefill bound",
        _rate(plan.prefill.bound_tok_s),
        f"TTFT ≥ {plan.prefill.ttft_lower_bound_s * 1000:,.0f} ms",
        delta_color="off",
        delta_arrow="off",
    )
    st.plotly_chart(inert(charts.memory_bar_figure(plan)), key="planner_memory_chart")
    left, right = st.columns(2)
    left.plotly_chart(inert(charts.decode_ceiling_figure(plan)), key="planner_decode_chart")
    right.plotly_chart(inert(charts.roofline_figure(plan)), key="planner_roofline_chart")
    with st.expander("All numbers (same as `cli.py plan --json`)"):
        st.json(plan_to_dict(plan))
    _measured(plan)


def _measured(planned: PlanResult) -> None:
    request = planned.request
    st.subheader("Measured against the limit")
    source = st.radio(
        "Achieved decode rate from",
        ["a stored benchmark run", "a number"],
        horizontal=True,
        key="planner_measure_source",
    )
    batch, context, achieved = request.batch, request.context, None
    if source == "a stored benchmark run":
        try:
            found = runs.runs_for_plan(request.model, request.gpu)
        except Exception as error:  # the run database may be unreachable: say so, keep the page
            st.error(f"Cannot read stored runs: {md_text(str(error))}")
            return
        if not found.all:
            st.info("No stored run has an output throughput yet. Run a benchmark, or type a number.")
            return
        plan_names = f"{md_line(planned.model.name)} on {md_line(planned.gpu.name)}"
        if not found.comparable:
            st.info(
                f"No stored run is comparable with this plan: none recorded {plan_names}. "
                "Run a benchmark of that model on that GPU, or type a number."
            )
        choices = found.comparable
        if found.others and st.checkbox(
            f"Also list the {len(found.others)} run(s) of another model or hardware",
            key="planner_run_any",
            help="Their share of this bound measures a different setup: only for a deliberate comparison.",
        ):
            choices = found.all
        if not choices:
            return
        labels = {match.entry.label: match for match in choices}
        chosen = labels[st.selectbox("Run and engine", list(labels), key="planner_run")]
        if not chosen.comparable:
            st.warning(
                "This run is not comparable with the plan ("
                + md_line("; ".join(chosen.reasons))
                + "): its share "
                f"of the {plan_names} bound does not measure how close that setup comes to its limit."
            )
        entry = chosen.entry
        batch, context, achieved = entry.batch, entry.context or request.context, entry.output_tok_s
        st.caption(
            f"Compared at batch {batch} and context {context:,} (the run's mean concurrency and mean "
            "context), on the model, GPU and format chosen above; its throughput includes prefill time."
        )
    else:
        achieved = st.number_input(
            "Achieved decode tokens/s (all sequences)", 0.0, 1e9, 0.0, key="planner_achieved"
        )
        if not achieved:
            return
    try:
        plan = make_plan(replace(request, batch=batch, context=context, achieved_tok_s=achieved))
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    m = plan.measured
    assert m is not None
    st.metric(
        "Share of the bound",
        f"{m.fraction:.1%}",
        f"{m.achieved_tok_s:,.1f} of {m.bound_tok_s:,.1f} tok/s ({m.limited_by})",
        delta_color="off",
        delta_arrow="off",
    )
    st.plotly_chart(
        inert(charts.decode_ceiling_figure(plan, m.achieved_tok_s)), key="planner_measured_chart"
    )


def _engines_tab() -> None:
    st.subheader("Feature matrix")
    st.dataframe(pd.DataFrame(engines_reference.feature_matrix()).T, key="planner_matrix")
    with st.expander("Every cell with its source"):
        st.dataframe(
            pd.DataFrame(engines_reference.feature_rows()),
            hide_index=True,
            column_config={"source": st.column_config.LinkColumn("source")},
            key="planner_sources",
        )
    st.subheader("Which engine?")
    with st.form("planner_decide"):
        c1, c2, c3 = st.columns(3)
        hardware = c1.selectbox(
            "Hardware",
            ["nvidia-datacenter", "nvidia-consumer", "amd", "apple", "cpu", "intel-gaudi"],
            key="planner_hw",
        )
        gpus = c2.number_input("GPUs per replica", 1, 1024, 1, key="planner_gpus")
        traffic = c3.selectbox(
            "Traffic",
            ["single-user", "interactive", "high-throughput", "offline-batch"],
            index=1,
            key="planner_traffic",
        )
        c1, c2, c3, c4 = st.columns(4)
        sharing = c1.selectbox(
            "Shared prefixes", ["none", "some", "heavy"], index=1, key="planner_prefix"
        )
        structured = c2.checkbox("Structured output (JSON schema)", key="planner_structured")
        operations = c3.selectbox(
            "Operations", ["simplest", "standard", "max-performance"], index=1, key="planner_ops"
        )
        model_format = c4.selectbox(
            "Model format",
            ["hf", "gguf"],
            key="planner_format",
            format_func=lambda f: {"hf": "Hugging Face checkpoint", "gguf": "GGUF"}[f],
        )
        st.form_submit_button("Rank engines")
    constraints = engines_reference.Constraints(
        hardware=hardware,
        gpus=int(gpus),
        traffic=traffic,
        prefix_sharing=sharing,
        structured_output=structured,
        operations=operations,
        model_format=model_format,
    )
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


def _launch_tab(request: PlanRequest) -> None:
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
    try:
        command = launch.build_launch(
            replace(
                planned,
                engine=engine,
                model=model,
                gpus=int(gpus),
                max_model_len=int(max_len),
                gpu_memory_utilization=float(util),
                prefix_caching=prefix,
                parallel_slots=int(slots),
                port=int(port) or None,
                bind_host=host.strip(),
                served_model_name=served.strip() or None,
            )
        )
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
            suggested = f"{command.engine}-{catalog.slugify(command.model_name.split('/')[-1])}"[:100]
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


def _presets_tab() -> None:
    st.subheader("Models")
    st.dataframe(
        pd.DataFrame(model_rows()),
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
        pd.DataFrame(gpu_rows()),
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
                if upload is not None and upload.name.endswith(".json"):
                    spec = importers.model_from_config_text(
                        upload.getvalue(),
                        key=key.strip(),
                        name=name.strip(),
                        hf_id=hf_id.strip() or None,
                    )
                elif upload is not None:
                    spec, _ = importers.model_from_gguf_bytes(
                        upload.getvalue(), upload.name, key=key.strip(), name=name.strip()
                    )
                elif path.strip():
                    spec, _ = importers.model_from_gguf(path.strip(), key=key.strip(), name=name.strip())
                else:
                    raise ValidationError("Upload a config.json or GGUF file, or give a GGUF path.")
                saved = catalog.save_custom_model(spec)
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
                gpu = GpuSpec(
                    key=key.strip(),
                    name=name.strip() or key.strip(),
                    memory_bytes=int(memory_gib * GIB),
                    bandwidth_bytes_s=bandwidth * 1e9,
                    bf16_tflops=bf16,
                    fp8_tflops=fp8 or None,
                    source="added by a user",
                    custom=True,
                )
                saved = catalog.save_custom_gpu(gpu)
                st.success(f"Saved {md_line(saved.name)} as {md_line(repr(saved.key))}.")
            except ShootoutError as error:
                st.error(md_text(str(error)))
    custom = [("model", k) for k in catalog.custom_models()] + [
        ("gpu", k) for k in catalog.custom_gpus()
    ]
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


try:
    presets = list_presets()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()

plan_tab, engines_tab, launch_tab, presets_tab = st.tabs(
    ["Fit & speed", "Engines", "Launch", "Models & GPUs"]
)
with plan_tab:
    request = _plan_form(presets)
    _show_plan(request)
with engines_tab:
    _engines_tab()
with launch_tab:
    _launch_tab(request)
with presets_tab:
    _presets_tab()
