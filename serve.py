"""The served app: Streamlit's ASGI App with Shootout's own routes (the lead adds the login gate here)."""
import streamlit as st
from web import exports
app = st.App("app.py", routes=exports.ROUTES)
