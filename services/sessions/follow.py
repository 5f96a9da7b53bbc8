"""What a room of followers reads to draw a Playground exchange, read once for the room.

The followers' screens in one server process share one read of the exchange per change of its
answers (while it streams, services.playground.watching's version says when that is), else one
per SHARED_READ_S: thirty followers drawing the same exchange cost one database read and one
build of its view, not thirty. A follower draws a newly shown exchange once its first words are
there (`first_words`): the room's redraws then stay out of the presenter's time to first words.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from services.playground import ExchangeView, get_exchange
from services.playground.watching import growing, version
from services.sessions.live import SHARED_READ_S


@dataclass(frozen=True)
class _Read:
    #: The shared reader's (serial, version) when read; None: no screen was watching it.
    version: tuple[int, int] | None
    at: float
    view: ExchangeView


_lock = threading.Lock()
#: Held while one follower reads for the room: the others wait for that read, not their own.
_reading = threading.Lock()
_reads: dict[int, _Read] = {}


def _shared(run_id: int) -> ExchangeView | None:
    current = version(run_id)
    with _lock:
        hit = _reads.get(run_id)
    if hit is None or hit.version != current:
        return None
    if current is None and time.monotonic() - hit.at >= SHARED_READ_S:
        return None
    return hit.view


def exchange(run_id: int) -> ExchangeView:
    """The exchange as `services.playground.get_exchange` reads it, shared by this process's
    followers: one read per change while it streams, one per SHARED_READ_S otherwise."""
    found = _shared(run_id)
    if found is not None:
        return found
    with _reading:
        found = _shared(run_id)
        if found is not None:
            return found
        # The version before the read: a change during it only makes the next read sooner.
        current, now = version(run_id), time.monotonic()
        view = get_exchange(run_id)
        with _lock:
            if len(_reads) > 1_000:  # a server running for months: start afresh rather than grow
                _reads.clear()
            _reads[run_id] = _Read(current, now, view)
    return view


def first_words(run_id: int, timeout_s: float) -> bool:
    """Wait until the exchange has its first words in some column (True), or has ended or
    `timeout_s` passed (False). Cheap: the exchange's shared reader wakes the waiting screens."""
    deadline = time.monotonic() + timeout_s
    seen = -1
    while (left := deadline - time.monotonic()) > 0:
        now = growing(run_id, seen, left)
        if not now.active:
            return False
        if any(text for _status, text in now.answers.values()):
            return True
        seen = now.version
    return False


def forget() -> None:
    """Tests: the next follower reads afresh."""
    with _lock:
        _reads.clear()
