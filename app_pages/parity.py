"""Parity page: do engines serving "the same model" give the same answers? A prompt set goes
greedily to 2-6 engines; quality (task score, match against a reference) shows beside speed.
Answers, engine names and errors are untrusted: they reach markdown and HTML only through
services.core.safe_text and services.playground.text."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.common import refresh_interval
from app_pages.parts import parity_setup
from services.core.errors import ShootoutError
from services.core.safe_text import md_line, md_text
from services.parity import view as page

st.title("Answer parity")
st.caption(
    "The same prompts at temperature 0, one seed and one max-tokens, to every engine; each answer is scored "
    "and compared token by token with a reference engine. A broken chat template or quantisation looks like "
    "“faster” in a latency benchmark: here it shows as a lower score and an early divergence."
)

try:
    records = page.list_engines()
    registered = [e.name for e in records]
    stored = page.list_parity_runs()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()

query_run = common.address_run_id()
if query_run is not None:
    st.session_state["parity_run_id"] = query_run


run_id = st.session_state.get("parity_run_id")
if run_id is None:
    parity_setup.setup_section(registered, page.default_engines(records), stored)
    st.stop()

with st.expander("New parity run or another stored run"):
    parity_setup.setup_section(registered, page.default_engines(records), stored)

try:
    first_view = page.parity_view(int(run_id))
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()


@st.fragment(run_every=refresh_interval(1.0) if first_view.live else None)
def run_section() -> None:
    try:
        view = page.parity_view(int(run_id))
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    header = page.run_header(view)
    st.subheader(header.title)
    st.caption(header.caption)
    if view.live:
        st.progress(min(1.0, view.progress), text=header.progress_text)
        viewer = common.viewer()
        if page.may_control_run(view.run_id, viewer) and st.button(
            "Cancel", key="parity_cancel", icon=":material/stop:"
        ):
            try:
                page.cancel_parity(view.run_id, viewer)
            except ShootoutError as error:
                st.error(md_text(str(error)))
                return
            st.rerun(scope="fragment")
    if view.error:
        st.error(md_text(view.error))
    if not view.live and first_view.live:
        st.rerun()  # draw the finished run's charts and tables outside the fragment's refresh
    if header.headline:
        st.markdown(header.headline)
    st.dataframe(page.summary_rows(view), hide_index=True, width="stretch")


run_section()
view = page.parity_view(int(run_id))
left, right = st.columns(2)
quality = page.quality_speed_figure(view)
spread = page.divergence_figure(view)
if quality is not None:
    left.plotly_chart(quality, width="stretch", key="parity_quality")
if spread is not None:
    right.plotly_chart(spread, width="stretch", key="parity_divergence")
elif view.others and not view.live:
    right.info(f"No answer diverged from {md_line(view.reference)}'s.")

st.subheader("Per prompt")
only_diverged = st.toggle("Only the prompts that diverged", key="parity_only_diverged")
rows = page.prompt_rows(view, only_diverged=only_diverged)
if rows:
    st.dataframe(rows, hide_index=True, width="stretch")
else:
    st.info("No prompt diverged." if only_diverged else "No answers yet.")

choices = page.prompt_choices(view, only_diverged=only_diverged)
if choices:
    cols = st.columns(2)
    picked = cols[0].selectbox(
        "Prompt", list(choices), key="parity_prompt_pick", format_func=choices.__getitem__
    )
    other = cols[1].selectbox("Against the reference", view.others, key="parity_other_pick")
    detail = page.prompt_detail(view, int(picked), str(other))
    st.text(detail.prompt_text)
    if detail.expected:
        st.caption(detail.expected)
    if detail.state == "unanswered":
        st.info(detail.message)
    elif detail.state == "not_compared":
        st.warning(detail.message)
    elif detail.state == "same":
        st.success(detail.message)
    else:
        st.markdown(detail.message)
        st.html(detail.divergence_html or "")
    if detail.diff_html:
        st.caption(detail.diff_caption or "")
        st.html(detail.diff_html)
