"""Issue 56 on the run page: no empty boxes under Distributions and the telemetry chart. One
answer per engine (a Playground exchange) has no distribution to draw; a run with neither
requests nor drawable telemetry gets its notes, not an empty chart."""

from __future__ import annotations

from db.models import Sample
from db.session import session_scope
from tests.app.test_runs_page import runs_page
from tests.services.runs.test_runs import engine_summary, make_run


def test_one_sample_per_engine_draws_no_distributions_box(db_url: str) -> None:
    """Each answer has one TTFT and one E2E (no line to draw) but many gaps between tokens."""
    run_id = make_run(requests={"a": [0.10], "b": [0.20]})
    at = runs_page(run=str(run_id))
    assert not at.exception, at.exception
    offered = at.button_group(key="run_cdf").options
    assert offered == ["ITL"], offered  # TPOT too is one per answer


def test_telemetry_with_nothing_to_draw_is_notes_not_an_empty_chart(db_url: str) -> None:
    run_id = make_run(engines={"a": engine_summary(0.1, 0.02, 1, 100)})
    with session_scope() as session:
        # Readings of signals the replay does not draw (a Triton's latency histogram).
        session.add(Sample(run_id=run_id, ts=1.0, source="engine:a", values={"_kind": "triton"}))
    at = runs_page(run=str(run_id))
    assert not at.exception, at.exception
    assert "Telemetry recorded" in [s.value for s in at.subheader]
    assert "runs_timeline" not in [chart.key for chart in at.get("plotly_chart")]
    assert any("no request results" in c.value for c in at.caption)
