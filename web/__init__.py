"""The ASGI layer: routes that Streamlit's `st.App` serves beside the app (see serve.py).
Like services, it never imports streamlit; unlike pages, it may speak HTTP through starlette."""
