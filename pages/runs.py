"""Runs page (filled by issue 6)."""

import streamlit as st

st.title("Runs")
st.info("This page is being built (issue 6). Nothing here is fake: it stays empty until it works.")
