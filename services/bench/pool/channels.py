"""What one pooled load's coordinator shares with its worker processes: the work queue, the
results queue, the stop and start flags, the request budget, and each worker's setup.
Ray's transport (services/bench/ray_pool/) offers the same names over its hub."""

from __future__ import annotations

import asyncio
import queue
import sys
import time
import types
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from services.bench.arrivals import LoadSpec
from services.bench.pool.plan import RECORD_BATCH, RECORD_FLUSH_S, TAKE_MOST
from services.bench.spec import EngineTarget, RequestSettings
from services.bench.workloads import WorkloadSpec


class SharedBudget:
    """The run's requests left and its deadline, shared by the worker processes."""

    def __init__(self, context: Any, requests: int | None) -> None:
        self.left = context.Value("q", -1 if requests is None else requests)
        self._deadline = context.Value("d", 0.0, lock=False)

    @property
    def deadline(self) -> float | None:
        value = self._deadline.value
        return value or None

    def set_deadline(self, deadline: float | None) -> None:
        self._deadline.value = deadline or 0.0

    def exhausted(self) -> bool:
        return self.left.value == 0

    def claim(self) -> bool:
        deadline = self._deadline.value
        if deadline and time.perf_counter() >= deadline:
            return False
        with self.left.get_lock():
            if self.left.value < 0:
                return True
            if self.left.value == 0:
                return False
            self.left.value -= 1
            return True

    def claim_many(self, count: int) -> int:
        """Up to `count` requests at once (no deadline check: the caller's); how many."""
        with self.left.get_lock():
            if self.left.value < 0:
                return count
            granted = min(count, self.left.value)
            self.left.value -= granted
            return granted

    def give_back(self) -> None:
        with self.left.get_lock():
            if self.left.value >= 0:
                self.left.value += 1


@dataclass
class WorkerSetup:
    worker: int
    engine: EngineTarget
    workload: WorkloadSpec
    load: LoadSpec
    start_offsets: list[float]
    concurrency_cap: int | None
    origin: float
    settings: RequestSettings
    #: The parent to watch (a worker whose coordinator is gone stops); None where the
    #: transport watches for itself (Ray actors: services/bench/ray_pool/).
    coordinator_pid: int | None


@contextmanager
def bare_main() -> Iterator[None]:
    """`spawn` re-runs the parent's __main__ in each child; the workers need none of it, and
    a main that is a script (a page under Streamlit's AppTest, a benchmark) would run again
    there. While the workers start, __main__ is an empty module."""
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


class Channels:
    """The queues and flags one pooled load shares with its workers."""

    def __init__(self, context: Any, requests: int | None, backlog: int) -> None:
        self.work: Any = context.Queue(maxsize=backlog)
        self.results: Any = context.Queue()
        self.stop: Any = context.Event()
        self.go: Any = context.Event()
        self.start_at: Any = context.Value("d", 0.0, lock=False)
        self.budget = SharedBudget(context, requests)
        #: Held while a worker takes closed-loop conversations and claims them together.
        self.take_lock: Any = context.Lock()
        #: False: first turns are claimed by the worker (as it takes them in closed loop,
        #: when due in open loop); Ray's transport claims them as it hands them out.
        self.claims_first_turns = False
        self.claim_turn: Callable[[], Awaitable[bool]] | None = None
        #: Records per message back (a queue put is cheap; a hub call is not: services/bench/ray_pool/).
        self.record_batch = RECORD_BATCH
        self.record_flush_s = RECORD_FLUSH_S
        #: A worker's largest take in closed loop (what it may hold claimed; `closed_loop_reserve`).
        self.take_most = TAKE_MOST


def takes_locally(work: Any) -> bool:
    """A queue of this host, which a worker's event loop may try without blocking (a thread
    hop costs more than the take itself); a transport of its own (Ray's hub) is a round trip."""
    return not hasattr(work, "take")


def take_from(work: Any, most: int, timeout: float, fewest: int | None = None) -> list[Any]:
    """Up to `most` items of a multiprocessing queue, waiting `timeout` for the first (0:
    what is there now, without blocking); a transport of its own (Ray's) offers
    `take(most, timeout, fewest)` instead (it hands only `fewest`, the slots waiting, once
    the budget nears its end)."""
    if not takes_locally(work):
        return work.take(most, timeout, fewest)
    try:
        items = _listed(work.get(timeout=timeout))
    except queue.Empty:
        return []
    while len(items) < most and items[-1] is not None:
        try:
            items += _listed(work.get_nowait())
        except queue.Empty:
            break
    return items


async def take_awaited(work: Any, most: int, timeout: float, fewest: int | None = None) -> list[Any]:
    """`take_from` without blocking the event loop: awaited where the transport can be (Ray's
    hub: its reply wakes the loop), else in a thread. A Ray `get` blocking in a thread cost
    a worker about a tenth of its CPU: it wakes every few milliseconds to check for signals,
    and takes the GIL from the loop each time."""
    if hasattr(work, "take_awaited"):
        return await work.take_awaited(most, timeout, fewest)
    return await asyncio.to_thread(take_from, work, most, timeout, fewest)


def _listed(item: Any) -> list[Any]:
    """A queue item: one, or a list the coordinator put together (taken whole)."""
    return item if isinstance(item, list) else [item]
