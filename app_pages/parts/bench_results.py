"""The Benchmarks page's run view: a live run's progress (a fragment that polls the stored
rows, so every viewer sees the same), and a finished run's status, notes, tables and charts.
What is shown is decided in services.bench.view.RunView; this only draws it."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from services.bench import view as views
from services.core.errors import ShootoutError
from services.core.figures import inert
from services.core.safe_text import md_line, md_text

STATUS_BOXES = {"success": st.success, "warning": st.warning, "error": st.error}
SELF_CHECK_BOXES = {
    views.CLIENT_BOUND: st.warning,
    views.UNCHECKED: st.info,
    views.KEPT_UP: st.caption,
}


@st.fragment(run_every=common.refresh_interval(1.0))
def live(run_id: int) -> None:
    try:
        view = views.run_view(run_id)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    if not view.active:
        st.rerun()
    st.progress(min(1.0, view.run.progress), text=view.progress_markdown)
    for line in view.count_lines:
        st.caption(line)
    viewer = common.viewer()
    # Only whoever started the run, or an operator, is offered Cancel (the service refuses others).
    if views.may_control_run(run_id, viewer) and st.button("Cancel run", key=f"bench_cancel_{run_id}"):
        try:
            views.cancel(run_id, viewer)
        except ShootoutError as error:
            st.error(md_text(str(error)))
            return
        st.rerun()
    st.plotly_chart(inert(view.figures["live"]), key=f"bench_live_{run_id}")


def results(view: views.RunView) -> None:
    run = view.run
    st.subheader(f"#{run.id} {md_line(run.name)}")
    STATUS_BOXES[view.status_level](view.status_markdown)
    for note in view.notes:
        st.caption(md_text(note))
    self_check(view.self_check, run.id)
    if view.has_tables:
        st.markdown("**Latency percentiles**")
        st.dataframe(view.table, hide_index=True, key=f"bench_table_{run.id}")
        st.markdown("**Throughput and counts**")
        st.dataframe(view.throughput, hide_index=True, key=f"bench_throughput_{run.id}")
    if not view.cost.empty:
        st.markdown("**Cost** (the price per hour the run used; docs/measuring.md)")
        st.dataframe(view.cost, hide_index=True, key=f"bench_cost_{run.id}")
        if view.cheapest:
            st.caption(md_line(view.cheapest))
    where_the_time_went(view)
    for name, figure in view.ordered_figures():
        st.plotly_chart(inert(figure), key=f"bench_{name}_{run.id}")


def self_check(check: views.RunCheck, run_id: int) -> None:
    """The generator's verdict in plain words (a warning when it limited the figures, a note
    when it could not check, a caption when it kept up), its evidence one click away."""
    if check.state is None:
        return
    text = "\n\n".join(md_line(line) for line in [check.title, *check.advice_lines])
    SELF_CHECK_BOXES[check.state](text)
    with st.expander("Self-check evidence (docs/measuring.md)", key=f"bench_selfcheck_{run_id}"):
        for line in check.evidence_lines:
            st.markdown(md_line(line))


def where_the_time_went(view: views.RunView) -> None:
    """Each engine's own queue, prefill and decode beside the rest of E2E, in words and as
    percentiles (the chart is among the figures; each request's split is in the timeline)."""
    if not view.split_lines:
        return
    st.markdown("**Where the time went** (the engine's own times beside the client's)")
    for line in view.split_lines:
        st.caption(md_line(line))
    if not view.split_table.empty:
        st.dataframe(view.split_table, hide_index=True, key=f"bench_split_{view.run.id}")
