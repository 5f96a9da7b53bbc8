"""The hub: one pooled load's shared state, a threaded Ray actor next to the coordinator."""

from __future__ import annotations

import pickle
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any, TypedDict, Unpack

from services.bench.pool.plan import ClosedLoopConversations


class HubFlags(TypedDict):
    """What the coordinator tells the Ray workers through the hub: stop, go and when (its clock)."""

    stop: bool
    go: bool
    start_at: float
    deadline: float


class FlagChange(TypedDict, total=False):
    """Some of the flags, as the coordinator sets them."""

    stop: bool
    go: bool
    start_at: float
    deadline: float


class Hub:
    """The shared state of one pooled load (a threaded Ray actor). A closed loop's
    conversations are drawn here as workers take them; an open loop's schedule is put by the
    coordinator, which alone keeps the clock of the arrivals.

    Conversations and records pass through it pickled (`pack`, `WorkerChannels.put`): the
    hub reads only what it needs beside each blob (turn indices, how many records were
    measured), since unpickling and pickling every item again here cost most of its CPU."""

    def __init__(
        self,
        backlog: int,
        requests: int | None,
        reserve: int = 0,
        conversations: ClosedLoopConversations | None = None,
    ) -> None:
        self.work: deque[Any] = deque()
        #: A closed loop's conversations, drawn here as workers take them (nothing is put).
        self.drawing: Iterator[Any] | None = None if conversations is None else conversations.draw()
        self.backlog = backlog
        #: With no more than this many requests left, a take hands only the slots waiting.
        self.reserve = reserve
        self.space = threading.Condition()
        self.left = -1 if requests is None else requests
        self.results: deque[Any] = deque()
        self.flags = HubFlags(stop=False, go=False, start_at=0.0, deadline=0.0)
        #: Per worker: the turns taken and not reported yet (for a lost node).
        self.taken: dict[int, dict[int, tuple[Any, int]]] = {}
        self.reported: dict[int, int] = {}
        #: Workers declared lost: what they sent before dying and the hub got after is dropped.
        self.gone: set[int] = set()
        #: A report and a loss of one worker, each whole: the hub's calls run on threads.
        self.reports = threading.Lock()

    def put_many(self, items: list[Any], timeout: float) -> int:
        # Room for the whole list (or a quarter of the backlog) before it is taken: each call
        # costs the hub more than a millisecond of CPU, so a list accepted piecemeal as takes
        # free a few places was several calls where one does.
        wanted = min(len(items), max(1, self.backlog // 4))
        with self.space:
            self.space.wait_for(
                lambda: self.backlog - len(self.work) >= wanted or self.flags["stop"], timeout
            )
            accepted = items[: max(0, self.backlog - len(self.work))]
            self.work.extend(accepted)
            self.space.notify_all()
            return len(accepted)

    def take(
        self, worker: int, most: int, timeout: float, fewest: int | None = None
    ) -> tuple[list[Any], bool]:
        """Up to `most` items (`fewest`, the worker's slots waiting, once no more than
        `reserve` requests are left), each conversation's first turn claimed from the budget;
        a spent budget ends the list with None (the end of the worker's schedule). Beside
        them: whether the budget is that near its end (a worker stops asking ahead then: a
        prefetch there is answered with nothing, a round trip per conversation wasted)."""
        with self.space:
            near_end = 0 <= self.left <= self.reserve
            if fewest is not None and near_end:
                most = min(most, fewest)
            self._draw(most if self.left < 0 else min(most, self.left))
            if not self.work and self.left != 0:  # a spent budget answers at once
                self.space.wait(timeout)
            items: list[Any] = []
            while self.work and len(items) < most:
                if self.work[0] is not None and self.left == 0:
                    items.append(None)
                    break
                items.append(self.work.popleft())
                if items[-1] is None:
                    break
                if self.left > 0:
                    self.left -= 1
            if not items and self.left == 0:
                items.append(None)
            self.space.notify_all()
        held = self.taken.setdefault(worker, {})
        for item in items:
            if item is not None:
                blob, turn_indices, conversation_id = item
                for turn_index in turn_indices:
                    held[turn_index] = (blob, conversation_id)
        return [None if item is None else item[0] for item in items], near_end

    def _draw(self, most: int) -> None:
        """Enough of the closed loop's conversations queued for a take of `most` (in the
        sequence's order; the take claims them)."""
        while self.drawing is not None and len(self.work) < most:
            conversation = next(self.drawing, None)
            if conversation is None:
                self.drawing = None
            else:
                self.work.append(pack(conversation))

    def claim(self) -> bool:
        with self.space:
            if self.left < 0:
                return True
            if self.left == 0:
                return False
            self.left -= 1
            return True

    def give_back(self) -> None:
        with self.space:
            if self.left >= 0:
                self.left += 1

    def exhausted(self) -> bool:
        return self.left == 0

    def put_result(self, message: tuple[str, int, Any]) -> None:
        kind, worker, payload = message
        with self.reports:
            if worker in self.gone:
                # Its unreported requests were failed as lost already. A call it made just
                # before its node went can still land after that (Ray orders calls per caller,
                # and the coordinator is another): kept, the request counted twice (seen: 16
                # records for a budget of 15).
                return
            if kind == "records":
                indices, measured, _ = payload
                held = self.taken.get(worker, {})
                for index in indices:
                    held.pop(index, None)
                self.reported[worker] = self.reported.get(worker, 0) + measured
            self.results.append(message)

    def drain(self, most: int = 1000) -> list[Any]:
        out: list[Any] = []
        while self.results and len(out) < most:
            out.append(self.results.popleft())
        return out

    def counts(self) -> dict[int, int]:
        return dict(self.reported)

    def lost(self, worker: int) -> list[tuple[int, Any]]:
        """A lost worker's unreported requests: each conversation's next turn (the one in
        flight, or due), as (turn index, the item handed out, pickled)."""
        with self.reports:
            self.gone.add(worker)
            held = self.taken.pop(worker, {})
        first: dict[int, tuple[int, Any]] = {}
        for turn_index, (item, conversation_id) in sorted(held.items()):
            first.setdefault(conversation_id, (turn_index, item))
        return list(first.values())

    def set(self, **flags: Unpack[FlagChange]) -> None:
        self.flags.update(flags)
        if flags.get("stop"):
            with self.space:
                self.space.notify_all()

    def state(self) -> HubFlags:
        return self.flags.copy()


def pack(item: Any) -> Any:
    """A work item as the hub holds it: (pickled item, its turn indices, conversation id)."""
    if item is None:
        return None
    conversation = item[1] if isinstance(item, tuple) else item
    return (
        pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL),
        tuple(turn.index for turn in conversation.turns),
        conversation.id,
    )
