"""services.runs.series: a compared run's engines as series, read from the typed results."""

from __future__ import annotations

from db.models import Exchange
from db.session import session_scope
from services import runs
from tests.services.runs.test_runs import make_run


def test_an_engine_without_a_stored_block_counts_its_own_answers(db_url: str) -> None:
    """A Playground run stores no engine blocks: its counts are its exchanges', never 0."""
    run_id = make_run(kind="playground", engines={})
    with session_scope() as session:
        for turn, status in ((1, "done"), (2, "done"), (3, "error")):
            session.add(
                Exchange(
                    run_id=run_id,
                    conversation_id="c1",
                    engine_name="llama",
                    turn=turn,
                    status=status,
                    answer="hi",
                    metrics={"ttft_s": 0.05, "e2e_s": 0.2},
                )
            )
    comparison = runs.comparison_of_run(runs.get_run(run_id))
    assert comparison is not None
    (series,) = comparison.series
    assert (series.completed, series.failed) == (2, 1)
