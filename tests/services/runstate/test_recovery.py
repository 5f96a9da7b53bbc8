"""After a restart, runs whose worker is gone are marked interrupted; live ones are not,
and nothing stored is lost."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from db.models import Exchange, Run, Sample
from db.session import session_scope
from services.runstate.run_kinds import mark_interrupted_after_restart as recover_interrupted_runs


def test_stale_runs_become_interrupted_and_keep_their_data(any_db_url: str) -> None:
    old = datetime.now(UTC) - timedelta(minutes=10)
    fresh = datetime.now(UTC)
    with session_scope() as session:
        stale_play = Run(kind="playground", status="running", heartbeat_at=old)
        live_play = Run(kind="playground", status="running", heartbeat_at=fresh)
        stale_rec = Run(kind="recording", status="running", heartbeat_at=old)
        stale_demo = Run(kind="demo", status="pending", created_at=old)
        done = Run(kind="demo", status="finished", heartbeat_at=old)
        session.add_all([stale_play, live_play, stale_rec, stale_demo, done])
        session.flush()
        session.add(
            Exchange(
                run_id=stale_play.id,
                conversation_id="c",
                engine_name="e",
                answer="partial",
                status="streaming",
            )
        )
        session.add(
            Sample(run_id=stale_rec.id, ts=1.0, source="engine:e", values={"kv_cache_usage": 0.5})
        )
        ids = {
            name: run.id
            for name, run in [
                ("stale_play", stale_play),
                ("live_play", live_play),
                ("stale_rec", stale_rec),
                ("stale_demo", stale_demo),
                ("done", done),
            ]
        }
    changed = recover_interrupted_runs()
    assert sorted(changed) == sorted([ids["stale_play"], ids["stale_rec"], ids["stale_demo"]])
    with session_scope() as session:
        status = {run.id: run.status for run in session.scalars(select(Run))}
        exchange = session.scalars(select(Exchange)).one()
        samples = session.scalars(select(Sample)).all()
    assert status[ids["live_play"]] == "running"
    assert status[ids["done"]] == "finished"
    assert (
        status[ids["stale_play"]]
        == status[ids["stale_rec"]]
        == status[ids["stale_demo"]]
        == "interrupted"
    )
    assert (exchange.status, exchange.answer) == ("interrupted", "partial")
    assert len(samples) == 1
    assert recover_interrupted_runs() == []  # idempotent
