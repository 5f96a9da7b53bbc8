"""Demos page (filled by issue 9)."""

import streamlit as st

st.title("Demos")
st.info("This page is being built (issue 9). Nothing here is fake: it stays empty until it works.")
