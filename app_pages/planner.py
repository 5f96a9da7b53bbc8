"""Planner page: will it fit, how fast can it possibly go, which engine, and how to start it."""

from __future__ import annotations

import streamlit as st

from app_pages.parts import planner_plan, planner_presets, planner_tabs, session_share
from services.core.errors import ShootoutError
from services.core.safe_text import md_text
from services.planner import view as planner

st.title("Planner")
st.caption(
    "KV-cache and weight memory, the roofline ceilings for decode and prefill, the engines side by side, "
    "and the command to start one. Ceilings are upper bounds: real engines reach a fraction of them."
)

try:
    presets = planner.list_presets()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()

plan_tab, engines_tab, launch_tab, presets_tab = st.tabs(
    ["Fit & speed", "Engines", "Launch", "Models & GPUs"]
)
with plan_tab:
    request = planner_plan.plan_form(presets)
    session_share.publish_planner(request)
    planner_plan.show_plan(request)
with engines_tab:
    planner_tabs.engines_tab()
with launch_tab:
    planner_tabs.launch_tab(request)
with presets_tab:
    planner_presets.presets_tab()
