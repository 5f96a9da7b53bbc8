"""The coordinator of a pooled load: draws the one seeded schedule, starts the workers,
feeds them, gathers their records into the run's one sink, merges their self-checks."""

from __future__ import annotations

import asyncio
import itertools
import math
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from services.bench.arrivals import LoadSpec, worker_start_offsets
from services.bench.pool.channels import Channels, WorkerSetup, bare_main
from services.bench.pool.plan import (
    FEED_CHUNK,
    FEED_WINDOW_S,
    LOOKAHEAD_S,
    MAX_WORKERS,
    POLL_S,
    READY_TIMEOUT_S,
    START_MARGIN_S,
    ClosedLoopConversations,
    closed_loop_reserve,
    conversations_ahead,
    split,
)
from services.bench.pool.worker import worker_process
from services.bench.selfcheck import report
from services.bench.spec import EngineTarget, RequestSettings
from services.bench.workloads import Conversation, WorkloadSpec, iter_conversations


class PooledEngineLoad:
    """An EngineLoad's stand-in for `workers` processes: the same `run()` and the same
    progress attributes (`load`, `done_count`, `measure_start`) for the Benchmark."""

    def __init__(
        self,
        engine: EngineTarget,
        workload: WorkloadSpec,
        load: LoadSpec,
        *,
        workers: int,
        sink: Any,
        should_stop: Callable[[], bool],
        settings: RequestSettings | None = None,
    ) -> None:
        from services.bench.runner import EngineOutcome

        self.engine, self.workload, self.load = engine, workload, load
        self.sink, self.should_stop = sink, should_stop
        self.settings = settings or RequestSettings()
        self.step = self.settings.step
        closed = load.mode == "concurrency"
        width = (load.concurrency or 1) if closed else (load.concurrency or workers)
        self.workers = max(1, min(workers, width, MAX_WORKERS))
        self.outcome = EngineOutcome(engine.name, model=engine.model)
        self.done_count = 0
        self.measure_start = 0.0
        self.failures: list[str] = []

    async def run(self) -> Any:
        return await asyncio.to_thread(self._coordinate)

    # -- plan --------------------------------------------------------------------------
    def _setups(self, origin: float) -> list[WorkerSetup]:
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

    def _conversations(self) -> Iterator[Conversation]:
        return iter_conversations(self.workload, salt=self.settings.salt, text=self.settings.text)

    def _closed_loop_conversations(self) -> ClosedLoopConversations:
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

    def _feed(
        self,
        body: Callable[[Channels, threading.Event], None],
        channels: Channels,
        finished: threading.Event,
    ) -> None:
        try:
            body(channels, finished)
        except Exception as error:  # noqa: BLE001 - workers starved of requests must stop, and say why
            self.failures.append(
                f"coordinator: drawing the requests failed: {type(error).__name__}: {error}"
            )
            channels.stop.set()

    def _feed_closed(self, channels: Channels, finished: threading.Event) -> None:
        # The closed loop's conversations in order; each slot takes the next one it claims.
        # In lists while the budget is far from its end, the last ones one by one.
        conversations = self._closed_loop_conversations().draw()
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

    def _feed_open(self, channels: Channels, finished: threading.Event) -> None:
        from services.bench.runner import planned_arrivals

        channels.go.wait()
        start, load = channels.start_at.value, self.load
        deadline = start + load.duration_s if load.duration_s else None
        limit = load.requests
        # Arrivals due to go out within FEED_WINDOW_S of each other go in one put (a few ms
        # earlier than LOOKAHEAD_S asks: harmless), so a burst costs one hub round trip.
        pending: list[Any] = []
        for count, (offset, conversation) in enumerate(planned_arrivals(load, self._conversations())):
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

    # -- running -----------------------------------------------------------------------
    def _coordinate(self) -> Any:
        context = multiprocessing.get_context("spawn")
        load = self.load
        closed = load.mode == "concurrency"
        # Closed loop: about twice the slots' conversations ahead, most of them in lists (the
        # last ones of a budget go one by one through the same few entries).
        backlog = max(8, math.ceil(conversations_ahead(load) / FEED_CHUNK)) if closed else 100_000
        channels = Channels(context, load.requests, backlog)
        origin = time.perf_counter()
        self.outcome.origin = origin
        self.outcome.wall_start = time.time()
        processes = [
            context.Process(
                target=worker_process,
                args=(setup, channels),
                daemon=True,
                name=f"shootout-bench-worker-{setup.worker}",
            )
            for setup in self._setups(origin)
        ]
        finished = threading.Event()
        feeder = threading.Thread(
            target=self._feed,
            args=(self._feed_closed if closed else self._feed_open, channels, finished),
            daemon=True,
        )
        with bare_main():
            for process in processes:
                process.start()
        feeder.start()
        done: dict[int, dict[str, Any]] = {}
        ready: set[int] = set()
        try:
            ready_by = time.monotonic() + READY_TIMEOUT_S
            while len(ready) + len(self.failures) < len(processes):
                self._take(channels, ready, done, processes)
                self._check_stop(channels)
                # A worker that died starting (an import error, the OOM killer) never reports.
                dead = [
                    index
                    for index, process in enumerate(processes)
                    if not process.is_alive() and index not in ready
                ]
                if dead and channels.results.empty():
                    self.failures += [
                        f"worker {index}: exited while starting (code {processes[index].exitcode})"
                        for index in dead
                        if not any(f.startswith(f"worker {index}:") for f in self.failures)
                    ]
                if channels.stop.is_set() or time.monotonic() > ready_by:
                    break
            if not self.failures and not channels.stop.is_set():
                self.measure_start = time.perf_counter() + START_MARGIN_S
                channels.budget.set_deadline(
                    self.measure_start + load.duration_s if load.duration_s else None
                )
                channels.start_at.value = self.measure_start
            else:
                channels.stop.set()
            channels.go.set()
            while len(done) < len(processes):
                self._take(channels, ready, done, processes)
                self._check_stop(channels)
                if all(not process.is_alive() for process in processes) and channels.results.empty():
                    break
        finally:
            finished.set()
            channels.stop.set()
            channels.go.set()
            for process in processes:
                process.join(timeout=10)
                if process.is_alive():
                    process.kill()
                    process.join(timeout=5)
            feeder.join(timeout=5)
            channels.work.cancel_join_thread()
        for index, process in enumerate(processes):
            reported = any(failure.startswith(f"worker {index}:") for failure in self.failures)
            if process.exitcode not in (0, None) and index not in done and not reported:
                self.failures.append(f"worker {index}: exited with code {process.exitcode}")
        if self.failures and not done:
            from services.errors import ShootoutError

            raise ShootoutError("The load's worker processes failed: " + "; ".join(self.failures))
        return self._outcome(done)

    def _check_stop(self, channels: Channels) -> None:
        if not channels.stop.is_set() and self.should_stop():
            self.outcome.cancelled = True
            channels.stop.set()

    def _take(
        self, channels: Channels, ready: set[int], done: dict[int, dict[str, Any]], processes: list[Any]
    ) -> None:
        try:
            kind, worker, payload = channels.results.get(timeout=POLL_S)
        except queue.Empty:
            return
        self._handle(kind, worker, payload, ready, done)

    def _handle(
        self, kind: str, worker: int, payload: Any, ready: set[int], done: dict[int, dict[str, Any]]
    ) -> None:
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

    def _outcome(self, done: dict[int, dict[str, Any]]) -> Any:
        outcome = self.outcome
        outcome.wall_end = time.time()
        parts = [done[index] for index in sorted(done)]
        outcome.checks = [part["check"] for part in parts]
        outcome.max_streams = sum(part["max_streams"] for part in parts)
        outcome.connections_ahead = sum(part["connections_ahead"] for part in parts)
        outcome.unsupported = parts[0]["unsupported"] if parts else []
        outcome.cancelled = outcome.cancelled or any(part["cancelled"] for part in parts)
        outcome.generator = report(outcome.checks, open_loop=self.load.mode != "concurrency")
        if self.failures:
            outcome.generator["worker_failures"] = list(self.failures)
        return outcome
