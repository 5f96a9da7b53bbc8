"""What the coordinator of a load spread over workers does, whatever carries the workers
(processes of this host: `coordinator.py`; Ray actors: services/bench/ray_pool/): deal the
load's shares, draw the one seeded schedule and feed it, take the workers' messages into the
run's one sink, merge their outcomes. Both transports hold one `Coordination` and add their
own starting, clocks and channels around it."""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from services.bench.arrivals import worker_start_offsets
from services.bench.load.outcome import EngineOutcome, WorkerEnd
from services.bench.load.pacing import planned_arrivals
from services.bench.load.transport import LoadJob
from services.bench.pool.channels import Channels, WorkerSetup
from services.bench.pool.plan import (
    FEED_CHUNK,
    FEED_WINDOW_S,
    LOOKAHEAD_S,
    MAX_WORKERS,
    POLL_S,
    ClosedLoopConversations,
    closed_loop_reserve,
    split,
)
from services.bench.selfcheck import report
from services.bench.stats import RequestRecord
from services.bench.workloads import Conversation, iter_conversations


class Coordination:
    """One load's coordination over `workers` workers: its shares, its feeding, its outcome,
    and the progress the Benchmark reads (`done_count`, `measure_start`)."""

    def __init__(self, job: LoadJob, workers: int) -> None:
        self.job = job
        self.engine, self.workload, self.load = job.engine, job.workload, job.load
        self.sink, self.should_stop = job.sink, job.should_stop
        self.settings = job.settings
        self.step = self.settings.step
        load = job.load
        closed = load.mode == "concurrency"
        width = (load.concurrency or 1) if closed else (load.concurrency or workers)
        self.workers = max(1, min(workers, width, MAX_WORKERS))
        self.outcome = EngineOutcome(job.engine.name, model=job.engine.model)
        self.done_count = 0
        self.measure_start = 0.0
        self.failures: list[str] = []

    # -- plan --------------------------------------------------------------------------
    def setups(self, origin: float) -> list[WorkerSetup]:
        """Each worker's share: its warm-ups, its closed-loop slots or its part of the cap."""
        load, count = self.load, self.workers
        warmups = split(load.warmup_requests, count)
        if load.mode == "concurrency":
            offsets = worker_start_offsets(load.concurrency or 1, load.ramp_up_s)
            slots = [offsets[index::count] for index in range(count)]
            caps: list[int | None] = [len(share) for share in slots]
        else:
            slots = [[] for _ in range(count)]
            caps = list(split(load.concurrency, count)) if load.concurrency else [None] * count
        return [
            WorkerSetup(
                worker=index,
                engine=self.engine,
                workload=self.workload,
                load=replace(load, concurrency=caps[index], warmup_requests=warmups[index]),
                start_offsets=slots[index],
                concurrency_cap=caps[index],
                origin=origin,
                settings=self.settings,
                coordinator_pid=os.getpid(),
            )
            for index in range(count)
        ]

    def conversations(self) -> Iterator[Conversation]:
        return iter_conversations(self.workload, salt=self.settings.salt, text=self.settings.text)

    def closed_loop_conversations(self) -> ClosedLoopConversations:
        return ClosedLoopConversations(
            self.workload, self.settings.salt, self.settings.text, self.load.requests
        )

    # -- feeding -----------------------------------------------------------------------
    def _put(self, channels: Channels, item: Any, finished: threading.Event) -> bool:
        while not finished.is_set() and not channels.stop.is_set():
            try:
                channels.work.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _put_all(
        self, channels: Channels, items: list[Any], finished: threading.Event, together: int = 1
    ) -> bool:
        """`items` in order, in lists of up to `together` (one pickling and one pipe write
        per list; a worker takes a list whole); a transport of its own (Ray's hub) takes
        them all in one round trip."""
        put_many = getattr(channels.work, "put_many", None)
        if put_many is None:
            if together > 1:
                items = [items[start : start + together] for start in range(0, len(items), together)]
            return all(self._put(channels, item, finished) for item in items)
        while items:
            if finished.is_set() or channels.stop.is_set():
                return False
            items = items[put_many(items, POLL_S) :]
        return True

    def feed(
        self,
        body: Callable[[Channels, threading.Event], None],
        channels: Channels,
        finished: threading.Event,
    ) -> None:
        """A feeder thread's target: `body` (`feed_closed` or `feed_open`), its failure said."""
        try:
            body(channels, finished)
        except Exception as error:  # noqa: BLE001 - workers starved of requests must stop, and say why
            self.failures.append(
                f"coordinator: drawing the requests failed: {type(error).__name__}: {error}"
            )
            channels.stop.set()

    def feed_closed(self, channels: Channels, finished: threading.Event) -> None:
        """The closed loop's conversations in order; each slot takes the next one it claims.
        In lists while the budget is far from its end, the last ones one by one."""
        conversations = self.closed_loop_conversations().draw()
        requests = self.load.requests
        in_lists = None if requests is None else requests - closed_loop_reserve(self.load, self.workers)
        handed = 0  # requests (turns) of the conversations handed out so far
        while chunk := list(itertools.islice(conversations, FEED_CHUNK)):
            listed = len(chunk)
            if in_lists is not None:
                listed = 0
                while listed < len(chunk) and handed < in_lists:
                    handed += len(chunk[listed].turns)
                    listed += 1
            if not self._put_all(channels, chunk[:listed], finished, together=FEED_CHUNK):
                return
            if not self._put_all(channels, chunk[listed:], finished):
                return

    def feed_open(self, channels: Channels, finished: threading.Event) -> None:
        """The open loop's arrivals, each a little ahead of its instant (`LOOKAHEAD_S`)."""
        channels.go.wait()
        start, load = channels.start_at.value, self.load
        deadline = start + load.duration_s if load.duration_s else None
        limit = load.requests
        # Arrivals due to go out within FEED_WINDOW_S of each other go in one put (a few ms
        # earlier than LOOKAHEAD_S asks: harmless), so a burst costs one hub round trip.
        pending: list[Any] = []
        for count, (offset, conversation) in enumerate(planned_arrivals(load, self.conversations())):
            if (limit is not None and count >= limit) or (
                deadline is not None and start + offset >= deadline
            ):
                break
            wait = start + offset - LOOKAHEAD_S - time.perf_counter()
            if pending and (wait > FEED_WINDOW_S or len(pending) >= FEED_CHUNK):
                if not self._put_all(channels, pending, finished, together=self._share(pending)):
                    return
                pending = []
            if not pending and channels.budget.exhausted():
                break
            if wait > FEED_WINDOW_S and finished.wait(wait):
                return
            pending.append((offset, conversation))
        if not self._put_all(channels, pending, finished, together=self._share(pending)):
            return
        self._put_all(channels, [None] * self.workers, finished)  # one end for each worker

    def _share(self, arrivals: list[Any]) -> int:
        """A burst of arrivals goes in one list per worker (each takes a list whole)."""
        return max(1, -(-len(arrivals) // self.workers))

    # -- the workers' messages ---------------------------------------------------------
    def handle(
        self, kind: str, worker: int, payload: Any, ready: set[int], done: dict[int, WorkerEnd]
    ) -> None:
        """One message of a worker: records for the sink, its readiness, its end or failure."""
        if kind == "records":
            for record in payload:
                self.outcome.records.append(record)
                if not record.warmup:
                    self.done_count += 1
                self.sink.add(record)
        elif kind == "ready":
            ready.add(worker)
        elif kind == "done":
            done[worker] = payload
        elif kind == "failed":
            self.failures.append(f"worker {worker}: {payload}")

    def add(self, record: RequestRecord) -> None:
        """A measured record the coordinator writes itself (a lost worker's requests)."""
        self.outcome.records.append(record)
        self.done_count += 1
        self.sink.add(record)

    def finish(self, done: dict[int, WorkerEnd]) -> EngineOutcome:
        """The load's one outcome from every worker's end (their self-checks merged)."""
        outcome = self.outcome
        outcome.wall_end = time.time()
        parts = [done[index] for index in sorted(done)]
        outcome.checks = [part.check for part in parts]
        outcome.max_streams = sum(part.max_streams for part in parts)
        outcome.connections_ahead = sum(part.connections_ahead for part in parts)
        outcome.unsupported = parts[0].unsupported if parts else []
        outcome.cancelled = outcome.cancelled or any(part.cancelled for part in parts)
        outcome.generator = report(outcome.checks, open_loop=self.load.mode != "concurrency")
        if self.failures:
            outcome.generator["worker_failures"] = list(self.failures)
        return outcome
