"""The live part of a session: the presenter publishes what they show, followers poll it.

A follower's poll is one primary-key read of the session row (`state`), plus at most one
write every SEEN_EVERY_S to say the follower is still there: thirty followers polling every
second cost the database thirty small reads a second and a write every few hundred
milliseconds, not a write each, so the presenter's own exchange is not kept waiting for the
database's write lock (benchmarks/session_followers.py measures it).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from db.models import DemoSession, SessionEvent, SessionParticipant
from db.session import session_scope
from services.errors import NotFoundError, ValidationError
from services.sessions.records import LiveState, Presence, Seat, Shown
from services.sessions.store import presenter_row

#: How often a follower's poll also says "still here" (a write).
SEEN_EVERY_S = 10.0
#: A follower not seen for this long no longer counts as following (closed the tab).
AWAY_AFTER_S = 3 * SEEN_EVERY_S
NOTE_CHARS = 2000

_seen: dict[tuple[int, str], float] = {}
_seen_lock = threading.Lock()


def publish(seat: Seat, shown: Shown) -> int:
    """Put `shown` on every follower's screen and in the timeline; returns its sequence number.
    Showing what is already shown changes nothing (pages call this on every rerun). A note
    goes into the timeline but leaves the followers' screens as they are."""
    if shown.kind == "note":
        return note(seat, shown.text)
    with session_scope() as db:
        row = presenter_row(db, seat)
        if row.shown_kind == shown.kind and Shown.from_json(row.shown_ref) == shown:
            return row.shown_seq
        seq = _append(db, row, shown)
        now = datetime.now(UTC)
        row.shown_kind, row.shown_ref, row.shown_at = shown.kind, shown.to_json(), now
        return seq


def note(seat: Seat, text: str) -> int:
    """A presenter's note in the timeline (and in the report)."""
    words = text.strip()
    if not words:
        raise ValidationError("A note needs some words.")
    with session_scope() as db:
        row = presenter_row(db, seat)
        return _append(db, row, Shown(kind="note", text=words[:NOTE_CHARS]))


def _append(db: Session, row: DemoSession, shown: Shown) -> int:
    # Added by its key, not through row.events: that would load the whole timeline first.
    row.shown_seq = (row.shown_seq or 0) + 1
    db.add(SessionEvent(session_id=row.id, seq=row.shown_seq, kind=shown.kind, ref=shown.to_json()))
    return row.shown_seq


def state(session_id: int) -> LiveState:
    """The followers' query: what the presenter shows now, one row read by its key."""
    with session_scope() as db:
        found = db.execute(
            select(
                DemoSession.title,
                DemoSession.ended_at,
                DemoSession.shown_seq,
                DemoSession.shown_ref,
            ).where(DemoSession.id == session_id)
        ).first()
    if found is None:
        raise NotFoundError(f"There is no session #{session_id}.")
    title, ended_at, seq, ref = found
    return LiveState(session_id, title, ended_at is not None, seq or 0, Shown.from_json(ref))


def poll(seat: Seat) -> LiveState:
    """A follower's poll: the state, and now and then a "still here"."""
    found = state(seat.session_id)
    key = (seat.session_id, seat.identity_hash)
    now = time.monotonic()
    with _seen_lock:
        due = now - _seen.get(key, float("-inf")) >= SEEN_EVERY_S
        if due:
            if len(_seen) > 50_000:  # a server running for months: start afresh rather than grow
                _seen.clear()
            _seen[key] = now
    if due and not found.ended:
        _mark_seen(seat)
    return found


def _mark_seen(seat: Seat, following: bool | None = None) -> None:
    values: dict[str, object] = {"last_seen_at": datetime.now(UTC)}
    if following is not None:
        values["following"] = following
    with session_scope() as db:
        db.execute(
            update(SessionParticipant)
            .where(
                SessionParticipant.session_id == seat.session_id,
                SessionParticipant.identity_hash == seat.identity_hash,
            )
            .values(**values)
        )


def set_following(seat: Seat, following: bool) -> None:
    """Stop following (look around on one's own) or follow again."""
    _mark_seen(seat, following)


def is_following(seat: Seat) -> bool:
    with session_scope() as db:
        found = db.scalar(
            select(SessionParticipant.following).where(
                SessionParticipant.session_id == seat.session_id,
                SessionParticipant.identity_hash == seat.identity_hash,
            )
        )
    return bool(found)


def presence(session_id: int) -> Presence:
    """How many follow now (seen lately and following) and how many joined at all."""
    since = datetime.now(UTC) - timedelta(seconds=AWAY_AFTER_S)
    with session_scope() as db:
        following = db.scalar(
            select(func.count(SessionParticipant.id)).where(
                SessionParticipant.session_id == session_id,
                SessionParticipant.following.is_(True),
                SessionParticipant.last_seen_at >= since,
            )
        )
        joined = db.scalar(
            select(func.count(SessionParticipant.id)).where(SessionParticipant.session_id == session_id)
        )
    return Presence(following=int(following or 0), joined=int(joined or 0))


def forget_seen() -> None:
    """Tests and the benchmark: every follower's next poll says "still here" again."""
    with _seen_lock:
        _seen.clear()
