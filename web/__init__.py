"""The ASGI layer in front of Streamlit (serve.py): the login gate (`gate.py`) and Shootout's own
HTTP routes (`exports.py`). It speaks HTTP through starlette; the gate borrows Streamlit's own
reader of its OIDC cookie, nothing else of Streamlit."""
