"""The served app: Streamlit's ASGI App with the login gate in front of every route.

`streamlit run serve.py` (run.sh does) serves app.py and Shootout's own routes (`web/exports.py`)
behind `web.gate.Gate`, so the export downloads need the login as the pages do. `streamlit run
app.py` still works for a single user on loopback, and shows nothing when a login is configured,
since Streamlit's own endpoints would then answer without one.
"""

import streamlit as st
from starlette.middleware import Middleware

from web import exports
from web.gate import Gate
from web.guard import harden_uvicorn

# Before `app` is returned to uvicorn, whose Config is still being loaded: no proxy headers from
# loopback, slow headers time out, connections per client are capped (web/guard.py says why).
harden_uvicorn()
app = st.App("app.py", routes=exports.ROUTES, middleware=[Middleware(Gate)])
