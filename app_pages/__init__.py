"""Streamlit pages (thin: read widgets, call one service, render)."""
