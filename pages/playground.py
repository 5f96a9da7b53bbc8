"""Playground page (filled by issue 3)."""

import streamlit as st

st.title("Playground")
st.info("This page is being built (issue 3). Nothing here is fake: it stays empty until it works.")
