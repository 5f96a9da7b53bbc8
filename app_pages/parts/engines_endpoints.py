"""The Engines page's endpoints: the "Add an endpoint" form and one card per registered
endpoint (probe, edit, remove). What the cards and messages say is built in
services.fleet.view; this only draws it."""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from services.fleet import view as engines_view

BOXES = {"success": st.success, "warning": st.warning, "error": st.error, "info": st.info}


def show(messages: Iterable[engines_view.Message | None]) -> None:
    for message in messages:
        if message is not None:
            BOXES[message.level](message.markdown)


def add_form(kind_labels: dict[str, str]) -> None:
    with st.form("add_engine_form", clear_on_submit=False, enter_to_submit=False):
        c1, c2 = st.columns(2)
        name = c1.text_input("Name", placeholder="vllm-h100", key="add_name")
        url = c2.text_input("Base URL", placeholder="http://gpu-box:8000", key="add_url")
        c3, c4, c5 = st.columns(3)
        kind = c3.selectbox(
            "Kind",
            [engines_view.DETECT, *kind_labels],
            format_func=lambda k: (
                "Detect from the server" if k == engines_view.DETECT else kind_labels[k]
            ),
            key="add_kind",
        )
        model = c4.text_input(
            "Model (optional)", placeholder="first one the server lists", key="add_model"
        )
        key_env = c5.text_input(
            "API key env variable (optional)", placeholder="VLLM_API_KEY", key="add_key_env"
        )
        c6, c7 = st.columns([2, 1])
        metrics_url = c6.text_input(
            "Metrics URL (optional)",
            placeholder="http://gpu-box:8002/metrics (Triton)",
            key="add_metrics_url",
        )
        usd_per_hour = c7.text_input(
            "Price, $/hour (optional)",
            placeholder="3.50",
            key="add_usd_per_hour",
            help=engines_view.PRICE_HELP,
        )
        store_unreachable = st.checkbox("Store even if it does not answer now", key="add_force")
        same_url_ok = st.checkbox(
            "Allow a URL another engine already uses",
            key="add_same_url",
            help="Another model on the same server, say. Otherwise a URL another engine points at "
            "is refused: two names for one server count its requests twice.",
        )
        submitted = st.form_submit_button("Probe and add", type="primary")
    if submitted:
        show(
            engines_view.add_endpoint(
                name,
                url,
                kind,
                model,
                key_env,
                metrics_url,
                store_unreachable,
                same_url_ok,
                usd_per_hour=usd_per_hour,
            )
        )


def engine_card(card: engines_view.EngineCard, kind_labels: dict[str, str], may_manage: bool) -> None:
    record = card.record
    with st.container(border=True, key=f"engine_card_{record.name}"):
        top, buttons = st.columns([7, 3], vertical_alignment="center")
        top.markdown(card.heading)
        probe_clicked = buttons.button(
            "Probe", key=f"probe_{record.name}", icon=":material/network_check:"
        )
        if may_manage:
            with st.popover("Edit / remove", icon=":material/edit:"):
                _edit_form(card, kind_labels)
        if probe_clicked:
            show([engines_view.probe_engine(record)])
        if card.metrics_hint:
            st.caption(f"Metrics: {card.metrics_hint}")


def _edit_form(card: engines_view.EngineCard, kind_labels: dict[str, str]) -> None:
    record = card.record
    with st.form(f"edit_{record.name}"):
        changes = {
            "base_url": st.text_input("Base URL", value=record.base_url, key=f"edit_url_{record.name}"),
            "model": st.text_input("Model", value=record.model or "", key=f"edit_model_{record.name}"),
            "kind": st.selectbox(
                "Kind",
                list(kind_labels),
                index=list(kind_labels).index(record.kind),
                format_func=kind_labels.get,
                key=f"edit_kind_{record.name}",
            ),
            "api_key_env": st.text_input(
                "API key env variable", value=record.api_key_env or "", key=f"edit_key_{record.name}"
            ),
            "metrics_url": st.text_input(
                "Metrics URL", value=record.metrics_url or "", key=f"edit_metrics_{record.name}"
            ),
            "usd_per_hour": st.text_input(
                "Price, $/hour",
                value=engines_view.price_field(record),
                key=f"edit_usd_per_hour_{record.name}",
                help=engines_view.PRICE_HELP,
            ),
        }
        if st.form_submit_button("Save"):
            refused = engines_view.save_engine(record.name, **changes)
            if refused is None:
                st.rerun()
            show([refused])
    confirm = st.checkbox(f"Yes, remove {card.name_markdown}", key=f"remove_confirm_{record.name}")
    if st.button("Remove", key=f"remove_{record.name}", disabled=not confirm, type="primary"):
        engines_view.remove_engine(record.name)
        st.rerun()
