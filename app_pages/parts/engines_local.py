"""The Engines page's local engines panel: one row per engine on this machine with its state
and its Start or Stop button (for an operator), refreshed every few seconds."""

from __future__ import annotations

import streamlit as st

from app_pages.common import refresh_interval
from app_pages.parts.engines_endpoints import show
from services import engines_view

INSTALL_HINT = (
    "Some engines are not installed yet. `python cli.py local up` installs and starts them "
    "(llama.cpp compiles once, 7-15 minutes on 2 cores)."
)


@st.fragment(run_every=refresh_interval(3.0))
def local_panel(may_manage: bool) -> None:
    panel = engines_view.local_panel()
    for row in panel.rows:
        left, mid, right = st.columns([3, 5, 2], vertical_alignment="center")
        left.markdown(row.title)
        if row.failed:
            mid.error(row.detail, icon=":material/error:")
        else:
            mid.caption(row.detail)
        if not may_manage:
            continue
        if row.action == "stop" and right.button("Stop", key=f"local_stop_{row.id}"):
            engines_view.stop_local(row.id)
            st.rerun(scope="fragment")
        elif row.action == "start" and right.button("Start", key=f"local_start_{row.id}"):
            refused = engines_view.start_local(row.id)
            if refused is None:
                st.rerun(scope="fragment")
            show([refused])
    if panel.missing:
        st.info(INSTALL_HINT)
