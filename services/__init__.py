"""Shootout's services: plain Python, no Streamlit. Pages and the CLI call these."""
