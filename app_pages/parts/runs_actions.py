"""What every view of the Runs page does the same way: switch view, archive, delete."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from services.core.errors import ShootoutError
from services.core.safe_text import md_text
from services.runs import view as runs


def go(**params: str | None) -> None:
    """Switch view by changing the view parameters of the address (filters stay)."""
    for key in ("run", "compare", "baseline", "allow_incomparable"):
        if key in st.query_params and key not in params:
            del st.query_params[key]
    for key, value in params.items():
        if value is None:
            st.query_params.pop(key, None)
        else:
            st.query_params[key] = value
    st.session_state.pop("runs_confirm_delete", None)
    st.rerun()


def back(key: str = "runs_back") -> None:
    if st.button("← All runs", key=key):
        go()


def set_archived(run_ids: list[int], archived: bool) -> None:
    try:
        runs.archive_runs(run_ids, archived, common.viewer())
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    st.toast(f"{'Archived' if archived else 'Brought back'} {len(run_ids)} run(s).")
    st.rerun()


def delete_confirmation(run_ids: list[int]) -> None:
    """Inline confirmation: nothing is deleted on the first click."""
    if st.session_state.get("runs_confirm_delete") != run_ids:
        return
    st.warning(runs.delete_question(run_ids))
    yes, no = st.columns(2)
    if yes.button("Yes, delete for good", type="primary", key="runs_delete_yes"):
        try:
            for run_id in run_ids:
                runs.delete_run(run_id)
        except ShootoutError as error:
            st.error(md_text(str(error)))
            return
        st.session_state.pop("runs_confirm_delete", None)
        st.toast(f"Deleted {len(run_ids)} run(s).")
        go()
    if no.button("Cancel", key="runs_delete_no"):
        st.session_state.pop("runs_confirm_delete", None)
        st.rerun()
