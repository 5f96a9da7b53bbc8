"""The Planner's "Fit & speed" tab: the plan form, the plan's figures and charts, and the share
of the bound a stored run (or a typed number) reaches."""

from __future__ import annotations

import streamlit as st

from services.core.errors import ShootoutError
from services.core.figures import inert
from services.core.safe_text import md_text
from services.planner import view as planner

NATIVE = "native"


def plan_form(presets: dict) -> planner.PlanRequest:
    state = st.session_state
    state.setdefault(
        "planner_request",
        planner.PlanRequest(model="llama-3-8b", gpu="h100-sxm", batch=16, context=8192),
    )
    current: planner.PlanRequest = state["planner_request"]
    models, gpus = list(presets["models"]), list(presets["gpus"])
    dtypes = [NATIVE, *presets["dtypes"]]
    # No form: a form kept the results on the old inputs until "Plan" was clicked, with no sign
    # that they were stale (issue 36). Planning is arithmetic, cheap enough for every change.
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
    mem_util = c4.slider("GPU memory utilisation", 0.05, 1.0, current.mem_util, 0.01, key="planner_util")
    c1, c2, c3, c4 = st.columns(4)
    block = c1.number_input("KV block size (tokens)", 1, 4096, current.block_size, key="planner_block")
    c4.text_input(
        "Your price ($ per GPU-hour)",
        key="planner_gpu_usd",
        placeholder="e.g. 3.50",
        help="No default: your cloud's or your own amortised price. Gives the cost floor below.",
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
    state["planner_request"] = planner.PlanRequest(
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


def _metrics(row: list[planner.Metric]) -> None:
    for column, card in zip(st.columns(len(row)), row, strict=True):
        column.metric(
            card.label, card.value, card.delta, help=card.help, delta_color="off", delta_arrow="off"
        )


def show_plan(request: planner.PlanRequest) -> None:
    try:
        plan = planner.make_plan(request)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    headline, warnings = planner.plan_notices(plan)
    if headline:
        st.error(md_text(headline), icon=":material/block:")
    for warning in warnings:
        st.warning(md_text(warning))
    for row in planner.plan_metrics(plan):
        _metrics(row)
    try:
        _metrics([planner.cost_floor(plan, st.session_state.get("planner_gpu_usd", ""))])
    except ShootoutError as error:
        st.error(md_text(str(error)))
    st.plotly_chart(inert(planner.memory_bar_figure(plan)), key="planner_memory_chart")
    left, right = st.columns(2)
    left.plotly_chart(inert(planner.decode_ceiling_figure(plan)), key="planner_decode_chart")
    right.plotly_chart(inert(planner.roofline_figure(plan)), key="planner_roofline_chart")
    with st.expander("All numbers (same as `shootout plan --json`)"):
        st.json(planner.plan_to_dict(plan))
    _measured(plan)


def _stored_run(planned: planner.PlanResult) -> planner.MeasuredAgainstBound | None:
    offer = planner.run_offer(planned)
    if offer.notice:
        st.info(offer.notice)
    include_others = bool(offer.others) and st.checkbox(
        offer.others_label,
        key="planner_run_any",
        help="Their share of this bound measures a different setup: only for a deliberate comparison.",
    )
    choices = offer.choices(include_others)
    if not choices:
        return None
    measured = planner.measure_run(
        planned, choices[st.selectbox("Run and engine", list(choices), key="planner_run")]
    )
    if measured.warning:
        st.warning(measured.warning)
    if measured.caption:
        st.caption(measured.caption)
    return measured


def _measured(planned: planner.PlanResult) -> None:
    st.subheader("Measured against the limit")
    source = st.radio(
        "Achieved decode rate from",
        ["a stored benchmark run", "a number"],
        horizontal=True,
        key="planner_measure_source",
    )
    try:
        if source == "a stored benchmark run":
            measured = _stored_run(planned)
        else:
            achieved = st.number_input(
                "Achieved decode tokens/s (all sequences)", 0.0, 1e9, 0.0, key="planner_achieved"
            )
            measured = planner.measure_number(planned, achieved) if achieved else None
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    if measured is None:
        return
    _metrics([measured.share])
    st.plotly_chart(
        inert(planner.decode_ceiling_figure(measured.plan, measured.achieved_tok_s)),
        key="planner_measured_chart",
    )
