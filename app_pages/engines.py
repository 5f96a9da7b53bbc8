"""Engines page: the registry of endpoints, probing, and the local engines."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.common import refresh_interval
from services import endpoints, local_engines, registration
from services.engines import adapters, get_adapter
from services.engines.probe import probe
from services.errors import ShootoutError
from services.safe_text import code_span, md_line, md_text

STATE_ICONS = {
    "ok": ":material/check_circle:",
    "unhealthy": ":material/hourglass_top:",
    "unreachable": ":material/cloud_off:",
    "auth_required": ":material/lock:",
    "not_openai": ":material/help:",
}
LOCAL_ICONS = {
    "running": ":green[●]",
    "starting": ":orange[●]",
    "stopped": ":gray[●]",
    "failed": ":red[●]",
    "not_installed": ":gray[○]",
}

st.title("Engines")
st.caption(
    "Every endpoint you compare, benchmark or watch. API keys stay in environment variables: "
    "only the variable's name is stored."
)

kind_labels = {a.kind: a.label for a in adapters()}


def show_probe(result) -> None:  # type: ignore[no-untyped-def]
    icon = STATE_ICONS.get(result.state, "")
    # What a server says about itself (version, model names, error bodies) is untrusted.
    details = (
        f"{md_line(result.kind_label)} · version {md_line(result.version) or 'unknown'} · "
        f"models: {', '.join(code_span(m) for m in result.models) or 'none'} · "
        f"context {md_line(str(result.context_length or 'unknown'))} · {result.latency_ms} ms"
    )
    message = md_text(result.message)
    if result.ok:
        st.success(f"{icon} {message}  \n{details}")
    elif result.state == "unhealthy":
        st.warning(f"{icon} {message}")
    else:
        st.error(f"{icon} {message}")


# Starting, stopping and registering engines (with their key variables) is an operator's job.
may_manage = common.viewer().may("manage_engines")

# ---------------------------------------------------------------- local engines
with st.container(border=True):
    st.subheader("Local engines")
    st.caption(
        "Real engines on this machine, all serving SmolLM2-135M-Instruct on 127.0.0.1: "
        "a three-way comparison with no GPU. They share this machine's cores, so compare them "
        "one at a time (the benchmark default) or under the same load."
    )

    @st.fragment(run_every=refresh_interval(3.0))
    def local_panel() -> None:
        statuses = local_engines.status()
        for s in statuses:
            left, mid, right = st.columns([3, 5, 2], vertical_alignment="center")
            left.markdown(f"{LOCAL_ICONS.get(s.status, '')} **{md_line(s.id)}**  \n{md_line(s.label)}")
            if s.status == "failed":
                mid.error(
                    f"{md_line(s.url)} · did not start: {md_text(s.message)}", icon=":material/error:"
                )
            else:
                mid.caption(
                    f"{md_line(s.url)} · {s.status} · {('pid ' + str(s.pid)) if s.pid else ''} "
                    f"{md_line(s.message)}"
                )
            if not may_manage:
                continue
            if s.status in ("running", "starting"):
                if right.button("Stop", key=f"local_stop_{s.id}"):
                    local_engines.stop(s.id)
                    st.rerun(scope="fragment")
            elif s.installed and right.button("Start", key=f"local_start_{s.id}"):
                try:
                    local_engines.start(s.id, wait=False)
                except ShootoutError as error:
                    st.error(md_text(str(error)))
                else:
                    st.rerun(scope="fragment")
        if any(not s.installed for s in statuses):
            st.info(
                "Some engines are not installed yet. `python cli.py local up` installs and starts them "
                "(llama.cpp compiles once, 7-15 minutes on 2 cores)."
            )

    local_panel()
    if may_manage and st.button(
        "Start all local engines", key="local_up_all", icon=":material/play_arrow:"
    ):
        errors = []
        for spec in local_engines.specs():
            try:
                local_engines.start(spec.id, wait=False)
            except ShootoutError as error:
                errors.append(str(error))
        for error in errors:
            st.error(md_text(error))
        if not errors:
            st.success(
                "Starting. llama.cpp is ready in seconds; vLLM compiles for about 2 minutes on first start."
            )

# ---------------------------------------------------------------- add an endpoint
if common.operator_only("manage_engines"):
    with st.expander("Add an endpoint", expanded=not endpoints.list_engines(), icon=":material/add:"):
        with st.form("add_engine_form", clear_on_submit=False):
            c1, c2 = st.columns(2)
            name = c1.text_input("Name", placeholder="vllm-h100", key="add_name")
            url = c2.text_input("Base URL", placeholder="http://gpu-box:8000", key="add_url")
            c3, c4, c5 = st.columns(3)
            kind_choice = c3.selectbox(
                "Kind",
                ["detect", *kind_labels],
                format_func=lambda k: "Detect from the server" if k == "detect" else kind_labels[k],
                key="add_kind",
            )
            model = c4.text_input(
                "Model (optional)", placeholder="first one the server lists", key="add_model"
            )
            key_env = c5.text_input(
                "API key env variable (optional)", placeholder="VLLM_API_KEY", key="add_key_env"
            )
            metrics_url = st.text_input(
                "Metrics URL (optional)",
                placeholder="http://gpu-box:8002/metrics (Triton)",
                key="add_metrics_url",
            )
            store_unreachable = st.checkbox("Store even if it does not answer now", key="add_force")
            submitted = st.form_submit_button("Probe and add", type="primary")
        if submitted:
            try:
                done = registration.probe_and_register(
                    name,
                    url,
                    kind=None if kind_choice == "detect" else kind_choice,
                    model=model or None,
                    api_key_env=key_env or None,
                    metrics_url=metrics_url or None,
                    store_unreachable=store_unreachable,
                )
                if done.probe is not None:
                    show_probe(done.probe)
                if done.record is not None:
                    st.success(f"Added **{md_line(done.record.name)}** ({md_line(done.record.label)}).")
                    if done.twins:
                        st.warning(
                            f"{md_line(', '.join(done.twins))} already point(s) at {code_span(done.record.base_url)}: "
                            "two names for one server count its requests twice in comparisons."
                        )
                else:
                    st.info("Not stored. Fix the URL, or tick 'Store even if it does not answer now'.")
            except ShootoutError as error:
                st.error(md_text(str(error)))

# ---------------------------------------------------------------- registered endpoints
st.subheader("Registered endpoints")
records = endpoints.list_engines()
if not records:
    st.info("No engines yet: start the local engines above, or add an endpoint.")
for record in records:
    with st.container(border=True, key=f"engine_card_{record.name}"):
        top, buttons = st.columns([7, 3], vertical_alignment="center")
        top.markdown(
            f"**{md_line(record.name)}** · {md_line(record.label)}  \n{code_span(record.base_url)} · "
            f"model {code_span(record.model or '-')}"
            + (f" · key from {code_span('$' + record.api_key_env)}" if record.api_key_env else "")
        )
        probe_clicked = buttons.button(
            "Probe", key=f"probe_{record.name}", icon=":material/network_check:"
        )
        if may_manage:
            with st.popover("Edit / remove", icon=":material/edit:"):
                with st.form(f"edit_{record.name}"):
                    new_url = st.text_input(
                        "Base URL", value=record.base_url, key=f"edit_url_{record.name}"
                    )
                    new_model = st.text_input(
                        "Model", value=record.model or "", key=f"edit_model_{record.name}"
                    )
                    new_kind = st.selectbox(
                        "Kind",
                        list(kind_labels),
                        index=list(kind_labels).index(record.kind),
                        format_func=kind_labels.get,
                        key=f"edit_kind_{record.name}",
                    )
                    new_key_env = st.text_input(
                        "API key env variable",
                        value=record.api_key_env or "",
                        key=f"edit_key_{record.name}",
                    )
                    new_metrics = st.text_input(
                        "Metrics URL", value=record.metrics_url or "", key=f"edit_metrics_{record.name}"
                    )
                    if st.form_submit_button("Save"):
                        try:
                            endpoints.update_engine(
                                record.name,
                                base_url=new_url,
                                model=new_model,
                                kind=new_kind,
                                api_key_env=new_key_env,
                                metrics_url=new_metrics,
                            )
                            st.rerun()
                        except ShootoutError as error:
                            st.error(md_text(str(error)))
                confirm = st.checkbox(
                    f"Yes, remove {md_line(record.name)}", key=f"remove_confirm_{record.name}"
                )
                if st.button(
                    "Remove", key=f"remove_{record.name}", disabled=not confirm, type="primary"
                ):
                    endpoints.remove_engine(record.name)
                    st.rerun()
        if probe_clicked:
            try:
                show_probe(probe(record.base_url, api_key_env=record.api_key_env))
            except ShootoutError as error:
                st.error(md_text(str(error)))
        hint = get_adapter(record.kind).metrics_hint
        if hint:
            st.caption(f"Metrics: {hint}")
