"""Starting, joining, handing over and ending sessions, and reading them back."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from db.models import DemoSession, SessionEvent, SessionParticipant
from db.session import session_scope
from services.core.errors import NotFoundError, ValidationError
from services.sessions import codes
from services.sessions.identity import identity_hash, may_present
from services.sessions.records import (
    NotPresenter,
    Rejoined,
    Seat,
    SessionEnded,
    SessionInfo,
    SessionSummary,
)
from services.team.access import PermissionDenied, Viewer

TITLE_CHARS = 200
#: Tries at a code no live session holds: 3.2 million codes, so a clash is already rare.
CODE_TRIES = 20


def _info(row: DemoSession) -> SessionInfo:
    return SessionInfo(
        id=row.id,
        title=row.title,
        join_code=row.join_code,
        started_at=row.started_at,
        ended_at=row.ended_at,
        presenter_hash=row.presenter_hash,
    )


def _refuse_unless_may_present(viewer: Viewer) -> None:
    if not may_present(viewer):
        raise PermissionDenied(
            "Only an operator, or a viewer the operator named in SHOOTOUT_SESSION_PRESENTERS, may "
            "present a session on this server."
        )


def _free_code(db: Session) -> str:
    for _ in range(CODE_TRIES):
        code = codes.new_code()
        taken = db.scalar(
            select(DemoSession.id).where(DemoSession.join_code == code, DemoSession.ended_at.is_(None))
        )
        if taken is None:
            return code
    raise ValidationError("Could not find a free join code: end some of the live sessions first.")


def start(viewer: Viewer, participant: str, title: str = "") -> tuple[SessionInfo, Seat]:
    """A new live session presented by `viewer` (as `participant`, see identity.py); the
    presenter's seat."""
    _refuse_unless_may_present(viewer)
    with session_scope() as db:
        row = DemoSession(title=title.strip()[:TITLE_CHARS], join_code=_free_code(db), presenter_hash="")
        db.add(row)
        db.flush()
        row.presenter_hash = identity_hash(row.id, participant)
        info = _info(row)
    return info, Seat(info.id, info.presenter_hash)


def get(session_id: int) -> SessionInfo:
    with session_scope() as db:
        row = db.get(DemoSession, session_id)
        if row is None:
            raise NotFoundError(f"There is no session #{session_id}.")
        return _info(row)


def by_code(typed: str) -> SessionInfo:
    """The live session a join code opens."""
    code = codes.normalise(typed)
    if not codes.well_formed(code):
        raise ValidationError(
            f"{typed.strip()[:20]!r} is not a join code: codes have {codes.LENGTH} letters and digits."
        )
    with session_scope() as db:
        row = db.scalars(
            select(DemoSession).where(DemoSession.join_code == code, DemoSession.ended_at.is_(None))
        ).first()
        if row is None:
            raise NotFoundError(f"No live session has the code {code}: it may have ended.")
        return _info(row)


def join(typed_code: str, participant: str) -> tuple[SessionInfo, Seat]:
    """Join a live session by its code (following from the start); the presenter joining their
    own session gets the presenter's seat back."""
    info = by_code(typed_code)
    seat = Seat(info.id, identity_hash(info.id, participant))
    if info.is_presenter(seat):
        return info, seat
    now = datetime.now(UTC)
    with session_scope() as db:
        row = db.scalars(
            select(SessionParticipant).where(
                SessionParticipant.session_id == info.id,
                SessionParticipant.identity_hash == seat.identity_hash,
            )
        ).first()
        if row is None:
            db.add(
                SessionParticipant(
                    session_id=info.id, identity_hash=seat.identity_hash, last_seen_at=now
                )
            )
        else:
            row.following = True
            row.last_seen_at = now
    return info, seat


def take_over(session_id: int, viewer: Viewer, participant: str) -> Seat:
    """Present a live session from this tab (to hand over, or where a reload lost the
    presenter's seat on a server without logins): only someone who may present at all."""
    _refuse_unless_may_present(viewer)
    seat = Seat(session_id, identity_hash(session_id, participant))
    with session_scope() as db:
        row = _live(db, session_id)
        row.presenter_hash = seat.identity_hash
    return seat


#: The live sessions a fresh tab looks through for its participant's seat (newest first).
REJOIN_LOOKS = 50


def rejoin(participant: str) -> Rejoined | None:
    """The seat `participant` holds in a live session, for a tab that lost it (a reload): the
    session they present, else the newest one they follow (not one they left or stopped
    following: they chose to look elsewhere). Two reads, once per tab."""
    with session_scope() as db:
        rows = list(
            db.scalars(
                select(DemoSession)
                .where(DemoSession.ended_at.is_(None))
                .order_by(DemoSession.id.desc())
                .limit(REJOIN_LOOKS)
            )
        )
        hashes = {row.id: identity_hash(row.id, participant) for row in rows}
        for row in rows:
            if row.presenter_hash == hashes[row.id]:
                info = _info(row)
                return Rejoined(info, Seat(row.id, hashes[row.id]), presenting=True, following=False)
        session_id = db.scalar(
            select(SessionParticipant.session_id)
            .where(
                SessionParticipant.identity_hash.in_(list(hashes.values())),
                SessionParticipant.following.is_(True),
            )
            .order_by(SessionParticipant.session_id.desc())
            .limit(1)
        )
        if session_id is None:
            return None
        info = _info(next(row for row in rows if row.id == session_id))
    return Rejoined(info, Seat(session_id, hashes[session_id]), presenting=False, following=True)


def _live(db: Session, session_id: int) -> DemoSession:
    row = db.get(DemoSession, session_id)
    if row is None:
        raise NotFoundError(f"There is no session #{session_id}.")
    if row.ended_at is not None:
        raise SessionEnded(f"Session {row.join_code} has ended.")
    return row


def presenter_row(db: Session, seat: Seat) -> DemoSession:
    """The live session `seat` presents; NotPresenter when it is anyone else's seat."""
    row = _live(db, seat.session_id)
    if row.presenter_hash != seat.identity_hash:
        raise NotPresenter("Only the session's presenter may do that; you follow this session.")
    return row


def end(seat: Seat) -> SessionInfo:
    with session_scope() as db:
        row = presenter_row(db, seat)
        row.ended_at = datetime.now(UTC)
        db.flush()
        return _info(row)


def list_sessions(limit: int = 50) -> list[SessionSummary]:
    """The newest sessions first, with how much each holds (two grouped counts, not one per row)."""
    with session_scope() as db:
        rows = list(db.scalars(select(DemoSession).order_by(DemoSession.id.desc()).limit(limit)))
        ids = [row.id for row in rows]
        events = dict(
            db.execute(
                select(SessionEvent.session_id, func.count(SessionEvent.id))
                .where(SessionEvent.session_id.in_(ids))
                .group_by(SessionEvent.session_id)
            ).all()
        )
        people = dict(
            db.execute(
                select(SessionParticipant.session_id, func.count(SessionParticipant.id))
                .where(SessionParticipant.session_id.in_(ids))
                .group_by(SessionParticipant.session_id)
            ).all()
        )
        return [
            SessionSummary(
                id=row.id,
                title=row.title,
                join_code=row.join_code,
                started_at=row.started_at,
                ended_at=row.ended_at,
                events=events.get(row.id, 0),
                participants=people.get(row.id, 0),
            )
            for row in rows
        ]
