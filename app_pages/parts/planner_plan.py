"""The Planner's "Fit & speed" tab: the plan form, the plan's figures and charts, and the share
of the bound a stored run (or a typed number) reaches."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from services.errors import ShootoutError
from services.figures import inert
from services.planner import PlanRequest, PlanResult, charts, make_plan, plan_to_dict, view
from services.planner.specs import GB, GIB
from services.safe_text import md_line, md_text

NATIVE = "native"


def plan_form(presets: dict) -> PlanRequest:
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


def show_plan(request: PlanRequest) -> None:
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
        view.rate(d.bound_tok_s),
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
        view.rate(plan.prefill.bound_tok_s),
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
            found = view.stored_runs(request.model, request.gpu)
        except ShootoutError as error:
            st.error(md_text(str(error)))
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
