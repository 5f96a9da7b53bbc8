"""The answers of a streaming exchange as they grow, read once for every screen that shows it.

A screen that shows a streaming exchange (the presenter's Playground, each follower of a
session) waits here for the next change instead of reading the database itself: one thread per
exchange reads its answers every POLL_S while any screen waits on it, and wakes every waiting
screen when something changed. Thirty followers cost one read, not thirty; a screen sees a
token within POLL_S of its write. The thread ends when the exchange does, or when no screen has
asked for IDLE_S.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

from sqlalchemy import select

from db.models import Exchange, Run
from db.session import session_scope
from services.playground.worker import streaming

#: How often the shared reader looks at a streaming exchange's rows.
POLL_S = 0.03
#: A reader no screen asked for this long stops.
IDLE_S = 3.0


@dataclass(frozen=True)
class Growing:
    """What a streaming exchange's columns hold now."""

    version: int
    #: engine -> (status, answer so far)
    answers: dict[str, tuple[str, str]] = field(default_factory=dict)
    active: bool = True


class _Reader:
    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        #: Tells this reader's versions from those of a reader before or after it.
        self.serial = next(_serials)
        self.changed = threading.Condition()
        self.now = Growing(0, {}, True)
        self.asked = time.monotonic()
        self.thread = threading.Thread(target=self._main, name=f"growing-{run_id}", daemon=True)

    def _read(self) -> tuple[dict[str, tuple[str, str]], bool]:
        with session_scope() as session:
            rows = session.execute(
                select(Exchange.engine_name, Exchange.status, Exchange.answer)
                .where(Exchange.run_id == self.run_id)
                .order_by(Exchange.id)
            ).all()
            run = session.execute(
                select(Run.status, Run.worker_pid).where(Run.id == self.run_id)
            ).first()
        answers = {name: (status, answer or "") for name, status, answer in rows}
        active = run is not None and streaming(self.run_id, run.status, run.worker_pid)
        return answers, active

    def _main(self) -> None:
        try:
            while time.monotonic() - self.asked < IDLE_S:
                answers, active = self._read()
                if answers != self.now.answers or active != self.now.active:
                    with self.changed:
                        self.now = Growing(self.now.version + 1, answers, active)
                        self.changed.notify_all()
                if not active:
                    break
                time.sleep(POLL_S)
        finally:
            with _lock:
                if _readers.get(self.run_id) is self:
                    del _readers[self.run_id]
            with self.changed:  # nobody waits on a reader that ended
                self.now = Growing(self.now.version + 1, self.now.answers, False)
                self.changed.notify_all()


_lock = threading.Lock()
_readers: dict[int, _Reader] = {}
_serials = itertools.count()


def version(run_id: int) -> tuple[int, int] | None:
    """Which read of the exchange its screens see now (one reader's serial and version: it
    changes whenever the answers or the end do), None when no screen is watching it."""
    with _lock:
        reader = _readers.get(run_id)
    return None if reader is None else (reader.serial, reader.now.version)


def growing(run_id: int, seen: int, timeout_s: float) -> Growing:
    """The exchange's answers once they differ from version `seen` (at once when they already
    do), or after `timeout_s` as they are."""
    with _lock:
        reader = _readers.get(run_id)
        if reader is None:
            reader = _readers[run_id] = _Reader(run_id)
            reader.thread.start()
        reader.asked = time.monotonic()
    with reader.changed:
        reader.changed.wait_for(lambda: reader.now.version != seen, timeout=timeout_s)
        return reader.now
