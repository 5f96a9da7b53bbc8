"""Benchmarks: start a load benchmark over one or more engines, watch it live, read its results.

Runs execute in a worker process (services.bench.jobs), so they go on when this page
closes; every viewer of `?run=ID` sees the same live progress. Logic lives in
services.bench.view; the form and the run view are drawn by app_pages/parts/bench_*.py.
"""

from __future__ import annotations

import streamlit as st

from app_pages.parts import bench_results
from app_pages.parts.bench_form import new_benchmark_form
from services.bench import view as views
from services.core.errors import ShootoutError
from services.core.safe_text import md_text

st.title("Benchmarks")

try:
    options = views.form_options()
    recent = views.recent_runs()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()

with st.expander("New benchmark", expanded="run" not in st.query_params):
    new_benchmark_form(options)

if not recent:
    st.caption("No benchmark has run yet.")
    st.stop()

choice = views.run_choice(recent, st.query_params.get("run"))
if choice.refused:
    st.error(md_text(choice.refused))
run_id = st.selectbox(
    "Run",
    list(choice.labels),
    index=list(choice.labels).index(choice.selected),
    format_func=choice.labels.get,
    key=f"bench_run_select_{choice.selected}",
)
if run_id != choice.selected:
    st.query_params["run"] = str(run_id)
    st.rerun()

try:
    current = views.run_view(run_id)
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()
if current.active:
    bench_results.live(run_id)
else:
    bench_results.results(current)
