"""The served app: Streamlit's ASGI App with the login gate in front of every route.

`streamlit run serve.py` (run.sh does) serves app.py behind `web.gate.Gate`; `streamlit run app.py`
still works for a single user on loopback, and refuses to show anything when a login is configured,
since Streamlit's own endpoints would then answer without one.
"""

import streamlit as st
from starlette.middleware import Middleware

from web.gate import Gate

app = st.App("app.py", middleware=[Middleware(Gate)])
