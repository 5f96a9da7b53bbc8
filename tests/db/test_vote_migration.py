"""Revision 0005 on a database that holds votes cast before participants: every vote survives,
its pair in name order, as the ballot of the voter "legacy" (a pair stored twice by the old
pairwise API becomes a voter of its own), and the new unique constraint holds after."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from db.schema import current_revision, ensure_schema, head_revision
from db.session import make_engine

pytestmark = pytest.mark.postgres


def test_old_votes_migrate_without_loss(any_db_url: str) -> None:
    from alembic import command

    from db.schema import alembic_config

    engine = make_engine(any_db_url)
    command.upgrade(alembic_config(engine), "0004")
    with engine.begin() as connection:
        for run_id in (1, 2):
            connection.execute(
                sa.text(
                    "INSERT INTO runs (id, kind, name, status, config, summary, engines, engine_names, "
                    "progress, notes, tags, archived, created_at) VALUES (:id, 'playground', '', "
                    "'finished', '{}', '{}', '[]', '', 1.0, '', '[]', :no, '2026-01-01')"
                ),
                {"id": run_id, "no": False},
            )
        rows = [
            (1, "c", "a", "c"),  # a best-of-three ballot: c beat a and b
            (1, "c", "b", "c"),
            (2, "x", "y", "x"),  # the old pairwise API: the same pair three times
            (2, "y", "x", "x"),
            (2, "x", "y", "tie"),
        ]
        for run_id, a, b, winner in rows:
            connection.execute(
                sa.text(
                    "INSERT INTO votes (run_id, engine_a, engine_b, winner, created_at) "
                    "VALUES (:r, :a, :b, :w, '2026-01-02')"
                ),
                {"r": run_id, "a": a, "b": b, "w": winner},
            )
    ensure_schema(engine)
    assert current_revision(engine) == head_revision()
    with engine.connect() as connection:
        stored = connection.execute(
            sa.text(
                "SELECT id, run_id, engine_a, engine_b, winner, voter, session_id FROM votes ORDER BY id"
            )
        ).all()
    assert [tuple(row) for row in stored] == [
        (1, 1, "a", "c", "c", "legacy", None),
        (2, 1, "b", "c", "c", "legacy", None),
        (3, 2, "x", "y", "x", "legacy", None),
        (4, 2, "x", "y", "x", "legacy:4", None),
        (5, 2, "x", "y", "tie", "legacy:5", None),
    ]
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO votes (run_id, engine_a, engine_b, winner, voter, created_at) "
                "VALUES (1, 'a', 'c', 'a', 'legacy', '2026-01-03')"
            )
        )
    engine.dispose()
