"""Streamlit drawing pieces of the pages that would make a page too long to read: they draw
values that services computed, and decide nothing. Not pages: app.py never routes to them."""
