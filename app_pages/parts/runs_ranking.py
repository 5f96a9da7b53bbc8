"""The ranking of engines from every blind vote, under the Runs history."""

from __future__ import annotations

import streamlit as st

from services.core.errors import ShootoutError
from services.core.safe_text import md_text
from services.runs import view as runs


def ranking() -> None:
    try:
        shown = runs.ranking_view()
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    if shown is None:
        return
    with st.expander("Engine ranking from blind votes"):
        st.dataframe(shown.table, hide_index=True, key="runs_ranking")
        st.caption(md_text(shown.caption))
        for note in shown.notes:
            st.warning(md_text(note))
        st.markdown("**Engine pairs: votes and win rates**")
        st.dataframe(shown.pairs, hide_index=True, key="runs_ranking_pairs")
