"""Issue 56: two runs of one llama.cpp listed `/props.media_marker` among the settings that differ;
it is a random token llama-server draws at every start (`<__media_…__>`), not a setting. A kind's
adapter names such per-process values and no comparison shows them."""

from __future__ import annotations

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services import runs
from services.bench.comparability import Comparability, compare_fingerprints
from services.bench.comparability.build import from_snapshot
from services.runs.tables import settings_table
from tests.services.runs.test_runs import engine_summary, make_run

PROPS = {"model_ftype": "Q4_1", "total_slots": 4}


def llama_run(marker: str, slots: int = 4) -> int:
    run_id = make_run(engines={"llamacpp": engine_summary(0.05, 0.01, 0.5, 900.0)})
    with session_scope() as session:
        run = session.scalars(select(Run).where(Run.id == run_id)).one()
        (llama,) = (dict(e) for e in run.engines)
        props = {**PROPS, "total_slots": slots, "media_marker": marker}
        llama.update(kind="llamacpp", reported={"/props": props, "version": "b7000"})
        run.engines = [llama]
    return run_id


def test_a_per_process_token_is_not_a_setting_that_differs(db_url: str) -> None:
    first, second = llama_run("<__media_a8Xq1__>"), llama_run("<__media_Zp03k__>")
    comparison = runs.compare_runs([first, second])
    assert "/props.media_marker" not in {row.key for row in comparison.settings}
    assert settings_table(comparison, only_differences=True).empty
    assert not any(v.engine_changes for v in comparison.comparability.verdicts)
    # A real difference is still listed, alone.
    changed = runs.compare_runs([first, llama_run("<__media_Qq__>", slots=1)])
    differing = [row.key for row in changed.settings if row.differs]
    assert differing == ["/props.total_slots"]
    (verdict,) = changed.comparability.verdicts
    assert [d.text for d in verdict.engine_changes] == [
        "Engine settings: 1 differ (/props.total_slots: 4 vs 1)"
    ]


def test_a_fingerprint_stored_with_the_token_does_not_differ_by_it() -> None:
    """Runs stored before: their fingerprints hold the token; the verdict leaves it out."""

    def stored(marker: str) -> Comparability:
        return from_snapshot(
            {"kind": "llamacpp", "reported": {"/props": {**PROPS, "media_marker": marker}}}
        )

    a, b = stored("<__media_one__>"), stored("<__media_two__>")
    assert not compare_fingerprints(a, b).engine_changes
    other_kind = Comparability(engine_kind="vllm", engine_settings={"/props.media_marker": "x"})
    assert compare_fingerprints(
        other_kind, Comparability(engine_kind="vllm", engine_settings={"/props.media_marker": "y"})
    ).engine_changes  # only the kind that declares it leaves it out
