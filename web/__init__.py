"""The ASGI layer in front of Streamlit (serve.py): the login gate and Shootout's own HTTP routes."""
