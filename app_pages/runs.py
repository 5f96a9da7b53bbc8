"""Runs: the history, one run, and comparisons of runs.

Every view has an address another viewer of the same server can open: `?run=12` (one
run), `?compare=12,13&baseline=13:vllm` (a comparison), and the list's filters (bound to
the query string). The views are drawn by app_pages/parts/runs_*.py from services.runs.view;
logic lives in services.runs, services.runs.reports and services.importers. Names, notes, labels
and errors are untrusted (imports, engines): they reach markdown only through services.core.safe_text.
"""

from __future__ import annotations

import streamlit as st

from app_pages.parts.runs_actions import back
from app_pages.parts.runs_history import history
from app_pages.parts.runs_results import compare
from app_pages.parts.runs_run import run
from app_pages.parts.session_record import sessions_list
from services.core.errors import ShootoutError
from services.core.safe_text import md_line
from services.runs import view as runs

if "compare" in st.query_params:
    compare()
elif "run" in st.query_params:
    try:
        run_id = runs.parse_run_ids(st.query_params.get("run", ""))[0]
    except (ShootoutError, IndexError):
        st.error(f"{md_line(repr(st.query_params.get('run')))} is not a run number.")
        back("runs_back_bad")
    else:
        run(run_id)
else:
    history()
    sessions_list()
