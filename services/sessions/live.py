"""The live part of a session: the presenter publishes what they show, followers poll it.

A follower's poll reads the session row by its key (`state`), and the followers served by one
server process share that read for SHARED_READ_S (IDLE_READ_S once nothing changed for
IDLE_AFTER_S); the "still here" of all of a session's followers is one write every
SEEN_EVERY_S. A follower's screen waits in `wait_for_change`, which a publish in this process
wakes at once. Thirty followers then cost the database at most five small reads a second (one
every two seconds while the presenter shows the same thing) and one write every ten seconds,
so neither the presenter's exchange nor the server's CPU waits on the room
(benchmarks/session_followers.py and benchmarks/room_followers.py measure it).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from db.models import DemoSession, SessionEvent, SessionParticipant
from db.session import session_scope
from services.core.errors import NotFoundError, ValidationError
from services.sessions.records import LiveState, Presence, Seat, Shown
from services.sessions.store import presenter_row

#: How often a follower's poll also says "still here" (a write).
SEEN_EVERY_S = 10.0
#: A follower not seen for this long no longer counts as following (closed the tab).
AWAY_AFTER_S = 3 * SEEN_EVERY_S
NOTE_CHARS = 2000

#: How long followers in this process share one read of a session (what they see lags the
#: presenter by at most this on top of their poll interval).
SHARED_READ_S = 0.2
#: A session whose shown thing has not changed for IDLE_AFTER_S is read only every IDLE_READ_S
#: (a publish in this process is seen at once all the same; another process's within it).
IDLE_AFTER_S = 10.0
IDLE_READ_S = 2.0

_lock = threading.Lock()
#: Session id -> when this process last saw its sequence change (or first read it).
_changed_at: dict[int, float] = {}
#: Woken by every publish in this process; `_published` counts them.
_published_here = threading.Condition()
_published = [0]
#: Session id -> (when read, what was read).
_read: dict[int, tuple[float, LiveState]] = {}
#: Session id -> followers polled since its last "still here" write, and when that was.
_pending: dict[int, set[str]] = {}
_flushed: dict[int, float] = {}


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
    with _lock:
        _read.pop(seat.session_id, None)  # followers served here see it at their next poll
        _changed_at[seat.session_id] = time.monotonic()
    with _published_here:  # and the screens waiting in wait_for_change see it now
        _published[0] += 1
        _published_here.notify_all()
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
    """A follower's poll: the state (shared with this process's other followers for
    SHARED_READ_S), and this follower's "still here", written with the others' now and then."""
    now = time.monotonic()
    with _lock:
        cached = _read.get(seat.session_id)
        idle = now - _changed_at.get(seat.session_id, float("-inf")) >= IDLE_AFTER_S
    if cached is not None and now - cached[0] < (IDLE_READ_S if idle else SHARED_READ_S):
        found = cached[1]
    else:
        found = state(seat.session_id)
        with _lock:
            if len(_read) > 10_000:  # a server running for months: start afresh rather than grow
                _read.clear()
                _changed_at.clear()
            before = _read.get(seat.session_id)
            if before is None or (before[1].seq, before[1].ended) != (found.seq, found.ended):
                _changed_at[seat.session_id] = now
            _read[seat.session_id] = (now, found)
    with _lock:
        _pending.setdefault(seat.session_id, set()).add(seat.identity_hash)
        due = now - _flushed.get(seat.session_id, float("-inf")) >= SEEN_EVERY_S
        seen = _pending.pop(seat.session_id) if due else set()
        if due:
            _flushed[seat.session_id] = now
    if seen and not found.ended:
        _mark_seen(seat.session_id, seen)
    return found


def wait_for_change(seat: Seat, seq: int, timeout_s: float) -> LiveState:
    """A follower's screen waiting for the presenter: the state once its sequence is no longer
    `seq` or the session ended, else after `timeout_s` as it is. A publish in this process wakes
    it at once; waiting costs nothing but the polls at its start and end."""
    deadline = time.monotonic() + timeout_s
    while True:
        with _published_here:
            published = _published[0]
        found = poll(seat)
        left = deadline - time.monotonic()
        if found.ended or found.seq != seq or left <= 0:
            return found
        with _published_here:
            if _published[0] == published:
                _published_here.wait(left)


def _mark_seen(session_id: int, identity_hashes: set[str], following: bool | None = None) -> None:
    values: dict[str, object] = {"last_seen_at": datetime.now(UTC)}
    if following is not None:
        values["following"] = following
    with session_scope() as db:
        db.execute(
            update(SessionParticipant)
            .where(
                SessionParticipant.session_id == session_id,
                SessionParticipant.identity_hash.in_(sorted(identity_hashes)),
            )
            .values(**values)
        )


def set_following(seat: Seat, following: bool) -> None:
    """Stop following (look around on one's own) or follow again."""
    _mark_seen(seat.session_id, {seat.identity_hash}, following)


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
    """Tests and the benchmark: the next poll reads afresh and says "still here" again."""
    with _lock:
        _read.clear()
        _pending.clear()
        _flushed.clear()
        _changed_at.clear()
