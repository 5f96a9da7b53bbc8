"""services/bench/pool's channel names over the hub: `WorkerChannels` for a worker in an
actor, `CoordinatorChannels` for the coordinator's feeders."""

from __future__ import annotations

import pickle
import queue
import threading
import time
from typing import Any

from services.bench.pool.plan import RAY_TAKE_MOST
from services.bench.ray_pool.hub import pack

STATE_POLL_S = 0.05
#: Once the run goes: a stop (a cancel, the coordinator's end) is seen within this; each poll is a hub call.
RUN_POLL_S = 0.5


class Value:
    def __init__(self, value: float = 0.0) -> None:
        self.value = value


class WorkerChannels:
    """services/bench/pool's `Channels` for a worker in an actor: the hub's flags polled by a thread
    (a hub that no longer answers stops the worker: its coordinator is gone), the times
    shifted into this host's clock."""

    #: The hub claims first turns as it hands them out (`Hub.take`).
    claims_first_turns = True
    #: Each message is a hub call (most of a millisecond of CPU on a small VM): fewer, larger.
    record_batch = 1024
    record_flush_s = 0.5
    #: A take is a round trip of milliseconds of CPU: up to this many conversations each.
    take_most = RAY_TAKE_MOST

    def __init__(self, hub: Any, worker: int, offset_s: float, *, limited: bool) -> None:
        # Ray is optional (requirements-ray.txt): loaded where a Ray pool runs, never on import.
        import ray

        self.ray, self.hub, self.worker, self.offset_s = ray, hub, worker, offset_s
        #: A budget of requests to share (else only the deadline bounds the run).
        self.limited = limited
        self.stop = threading.Event()
        self.go = threading.Event()
        self.start_at = Value()
        self.work = self
        self.results = self
        self.budget = self
        self._deadline = 0.0
        #: The hub hands only the slots waiting from here on: nothing to ask ahead for.
        self.near_end = False
        self._sent: list[Any] = []
        self._closed = threading.Event()
        self._poller = threading.Thread(target=self._poll, daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        while not self._closed.is_set() and not self.stop.is_set():
            try:
                flags = self.ray.get(self.hub.state.remote(), timeout=10)
            except Exception:  # noqa: BLE001 - the coordinator is gone: stop
                self.stop.set()
                return
            if flags["deadline"]:
                self._deadline = flags["deadline"] + self.offset_s
            if flags["go"] and not self.go.is_set():
                self.start_at.value = flags["start_at"] + self.offset_s if flags["start_at"] else 0.0
                self.go.set()
            if flags["stop"]:
                self.stop.set()
            self._closed.wait(STATE_POLL_S if not self.go.is_set() else RUN_POLL_S)

    # work
    def take(self, most: int, timeout: float, fewest: int | None = None) -> list[Any]:
        return self._taken(*self.ray.get(self.hub.take.remote(self.worker, most, timeout, fewest)))

    async def take_awaited(self, most: int, timeout: float, fewest: int | None = None) -> list[Any]:
        return self._taken(*await self.hub.take.remote(self.worker, most, timeout, fewest))

    def _taken(self, blobs: list[Any], near_end: bool) -> list[Any]:
        self.near_end = self.near_end or near_end
        return [None if blob is None else pickle.loads(blob) for blob in blobs]

    # results: sent without waiting (a round trip would stall the event loop); the run
    # returns only once all have landed, and the coordinator drains the hub after that
    def put(self, message: Any) -> None:
        kind, worker, payload = message
        if kind == "records":
            payload = (
                [record.index for record in payload],
                sum(1 for record in payload if not record.warmup),
                pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL),
            )
        self._sent.append(self.hub.put_result.remote((kind, worker, payload)))

    def cancel_join_thread(self) -> None:
        self._sent.clear()

    def join_thread(self) -> None:
        self.ray.get(self._sent)
        self._sent.clear()

    # budget
    @property
    def deadline(self) -> float | None:
        return self._deadline or None

    def claim(self) -> bool:
        if self._deadline and time.perf_counter() >= self._deadline:
            return False
        return not self.limited or self.ray.get(self.hub.claim.remote())

    async def claim_turn(self) -> bool:
        if self._deadline and time.perf_counter() >= self._deadline:
            return False
        return not self.limited or await self.hub.claim.remote()

    def give_back(self) -> None:
        self.hub.give_back.remote()

    def close(self) -> None:
        self._closed.set()


class HubWork:
    def __init__(self, ray: Any, hub: Any) -> None:
        self.ray, self.hub = ray, hub
        #: Packed items the hub had no room for yet (the feeder offers them again).
        self._packed: dict[int, tuple[Any, Any]] = {}

    def _packed_once(self, item: Any) -> Any:
        held = self._packed.get(id(item))
        if held is None or held[0] is not item:
            held = (item, pack(item))
            self._packed[id(item)] = held
        return held[1]

    def put(self, item: Any, timeout: float) -> None:
        if not self.put_many([item], timeout):
            raise queue.Full

    def put_many(self, items: list[Any], timeout: float) -> int:
        """As many of `items` as the hub's backlog takes (waiting up to `timeout` for room)."""
        packed = [self._packed_once(item) for item in items]
        accepted = int(self.ray.get(self.hub.put_many.remote(packed, timeout)))
        for item in items[:accepted]:
            self._packed.pop(id(item), None)
        return accepted

    def cancel_join_thread(self) -> None:
        pass


class HubBudget:
    def __init__(self, ray: Any, hub: Any) -> None:
        self.ray, self.hub = ray, hub

    def exhausted(self) -> bool:
        return self.ray.get(self.hub.exhausted.remote())


class CoordinatorChannels:
    """services/bench/pool's `Channels` as its feeders use them, over the hub."""

    def __init__(self, ray: Any, hub: Any) -> None:
        self.work = HubWork(ray, hub)
        self.budget = HubBudget(ray, hub)
        self.stop = threading.Event()
        self.go = threading.Event()
        self.start_at = Value()
