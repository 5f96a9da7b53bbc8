"""The Engines page's local engines panel: one row per engine on this machine with its state (its
install's phase, time and last log lines while it installs) and its Start, Stop or Retry button
(for an operator), refreshed every few seconds."""

from __future__ import annotations

import streamlit as st

from app_pages.common import refresh_interval
from app_pages.parts.engines_endpoints import show
from services.fleet import view as engines_view

INSTALL_HINT = (
    "Some engines are not installed yet. `./run.sh` installs and starts them behind the app, as "
    "does `shootout local up` (llama.cpp compiles once, 7-15 minutes on 2 cores)."
)


@st.fragment(run_every=refresh_interval(3.0))
def local_panel(may_manage: bool) -> None:
    panel = engines_view.local_panel()
    # Read by the page's "Start all" below the panel, in the same run (no second status read).
    st.session_state["local_startable"] = panel.startable
    for row in panel.rows:
        left, mid, right = st.columns([3, 5, 2], vertical_alignment="center")
        left.markdown(row.title)
        if row.failed:
            mid.error(row.detail, icon=":material/error:")
        else:
            mid.caption(row.detail)
        if row.log_lines:
            mid.code(row.log_lines, language=None)
        if not may_manage:
            continue
        if row.action == "retry" and right.button("Retry", key=f"local_retry_{row.id}"):
            show([engines_view.retry_install(row.id)])
        if row.action == "stop":
            # One click only asks: the engines are shared, and a stop ends others' runs on it.
            right.button("Stop", key=f"local_stop_{row.id}", on_click=_ask_stop, args=(row.id,))
        elif row.action == "start" and right.button("Start", key=f"local_start_{row.id}"):
            refused = engines_view.start_local(row.id)
            if refused is None:
                st.rerun(scope="fragment")
            show([refused])
    asked = st.session_state.get("local_stop_asked")
    if asked is not None:
        _confirm_stop(asked, [row for row in panel.rows if row.id == asked and row.action == "stop"])
    if panel.missing:
        st.info(INSTALL_HINT)


def _ask_stop(engine_id: str | None) -> None:
    st.session_state["local_stop_asked"] = engine_id


def _stop(engine_id: str) -> None:
    st.session_state["local_stop_asked"] = None
    engines_view.stop_local(engine_id)


def _confirm_stop(engine_id: str, rows: list[engines_view.LocalRow]) -> None:
    if not rows:  # stopped meanwhile (another user, the CLI): nothing left to ask
        st.session_state["local_stop_asked"] = None
        return
    st.warning(engines_view.stop_question(engine_id), icon=":material/warning:")
    yes, no, _ = st.columns([1, 1, 4])
    yes.button("Yes, stop it", key="local_stop_yes", type="primary", on_click=_stop, args=(engine_id,))
    no.button("Cancel", key="local_stop_no", on_click=_ask_stop, args=(None,))
