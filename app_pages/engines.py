"""Engines page: the registry of endpoints, probing, and the local engines.

What each part says is built in services.fleet.view; app_pages/parts/engines_*.py draw it."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.parts import engines_endpoints
from app_pages.parts.engines_local import local_panel
from services.fleet import view as engines_view

st.title("Engines")
st.caption(
    "Every endpoint you compare, benchmark or watch. API keys stay in environment variables: "
    "only the variable's name is stored."
)

kind_labels = engines_view.kind_labels()
# Starting, stopping and registering engines (with their key variables) is an operator's job.
may_manage = common.viewer().may("manage_engines")

with st.container(border=True):
    st.subheader("Local engines")
    st.caption(
        "Real engines on this machine, all serving SmolLM2-135M-Instruct on 127.0.0.1 with no "
        "GPU. They share this machine's cores, so compare them one at a time (the benchmark "
        "default) or under the same load."
    )
    local_panel(may_manage)
    if (
        may_manage
        and st.session_state.get("local_startable")
        and st.button("Start all local engines", key="local_up_all", icon=":material/play_arrow:")
    ):
        engines_endpoints.show(engines_view.start_all_local())

if common.operator_only("manage_engines"):
    # Open by default only while nothing is registered, decided once per session: an untracked
    # expander folds itself whenever `expanded` changes between runs, so an endpoint that appears
    # meanwhile (a teammate's, a local engine coming up) folded the form under the user typing in it.
    start_open = st.session_state.setdefault("add_endpoint_open", not engines_view.has_endpoints())
    with st.expander("Add an endpoint", expanded=start_open, icon=":material/add:"):
        engines_endpoints.add_form(kind_labels)

st.subheader("Registered endpoints")
cards = engines_view.engine_cards()  # read after the form: an endpoint just added is listed
if not cards:
    st.info("No engines yet: start the local engines above, or add an endpoint.")
for card in cards:
    engines_endpoints.engine_card(card, kind_labels, may_manage)
