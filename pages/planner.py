"""Planner page (filled by issue 7)."""

import streamlit as st

st.title("Planner")
st.info("This page is being built (issue 7). Nothing here is fake: it stays empty until it works.")
