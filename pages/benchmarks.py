"""Benchmarks page (filled by issue 4)."""

import streamlit as st

st.title("Benchmarks")
st.info("This page is being built (issue 4). Nothing here is fake: it stays empty until it works.")
