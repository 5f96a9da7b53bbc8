"""Monitor page (filled by issue 5)."""

import streamlit as st

st.title("Monitor")
st.info("This page is being built (issue 5). Nothing here is fake: it stays empty until it works.")
