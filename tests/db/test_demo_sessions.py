"""The demo-session tables (revision 0006): the migrated schema matches the models, deleting a
session deletes its timeline and participants, and a participant is one row per session."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from db.models import Base, DemoSession, SessionEvent, SessionParticipant
from db.session import get_session_factory, session_scope


def test_the_migrated_tables_match_the_models(db_url: str) -> None:
    engine = get_session_factory(db_url).kw["bind"]
    with engine.connect() as connection:
        diffs = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    ours = [
        d
        for d in diffs
        if any(name in str(d) for name in ("demo_sessions", "session_events", "session_participants"))
    ]
    assert ours == []


def test_a_session_s_rows_go_with_it(db_url: str) -> None:
    with session_scope() as db:
        row = DemoSession(title="t", join_code="ACDEF", presenter_hash="p" * 64)
        db.add(row)
        db.flush()
        db.add(SessionEvent(session_id=row.id, seq=1, kind="note", ref={"kind": "note", "text": "x"}))
        db.add(SessionParticipant(session_id=row.id, identity_hash="h" * 64))
    with session_scope() as db:
        db.delete(db.scalars(select(DemoSession)).one())
    with session_scope() as db:
        assert db.scalar(select(sa.func.count(SessionEvent.id))) == 0
        assert db.scalar(select(sa.func.count(SessionParticipant.id))) == 0


def test_one_participant_row_per_identity_and_session(db_url: str) -> None:
    with session_scope() as db:
        row = DemoSession(title="", join_code="ACDEF", presenter_hash="p" * 64)
        db.add(row)
        db.flush()
        session_id = row.id
        db.add(SessionParticipant(session_id=session_id, identity_hash="h" * 64))
    with pytest.raises(IntegrityError), session_scope() as db:
        db.add(SessionParticipant(session_id=session_id, identity_hash="h" * 64))
