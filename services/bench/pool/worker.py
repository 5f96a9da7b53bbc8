"""A worker process's body (`multiprocessing` spawns it; a Ray actor runs the same): one
EngineLoad on its own fast loop, taking its requests and its start from the coordinator and
sending its records back in batches."""

from __future__ import annotations

import asyncio
import collections
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from services.bench.load.engine_load import EngineLoad
from services.bench.load.outcome import WorkerEnd, WorkerPlan
from services.bench.load.pacing import MAX_IN_FLIGHT, quiet_gc
from services.bench.pool.channels import (
    Channels,
    WorkerSetup,
    take_awaited,
    take_from,
    takes_locally,
)
from services.bench.pool.plan import POLL_S, RECORD_BATCH, RECORD_FLUSH_S, TAKE_MOST, take_batch
from services.bench.selfcheck import WorkerCheck
from services.bench.stats import RequestRecord
from services.bench.workloads import Conversation
from services.client import make_http_client, run_blocking


class _ResultSink:
    """Records back to the coordinator in small batches (one pickling per batch)."""

    def __init__(
        self, results: Any, worker: int, most: int = RECORD_BATCH, every_s: float = RECORD_FLUSH_S
    ) -> None:
        self.results = results
        self.worker = worker
        self.most = most
        self.every_s = every_s
        self.batch: list[RequestRecord] = []
        self.flushed = time.perf_counter()

    def add(self, record: RequestRecord) -> None:
        self.batch.append(record)
        if len(self.batch) >= self.most or time.perf_counter() - self.flushed >= self.every_s:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.results.put(("records", self.worker, self.batch))
            self.batch = []
        self.flushed = time.perf_counter()


class _Feed:
    """Where a worker's conversations come from, and whether it goes on: the coordinator's
    queue (or Ray's hub), taken a few at a time and claimed from the run's budget as taken."""

    def __init__(self, setup: WorkerSetup, channels: Channels, sink: _ResultSink) -> None:
        self.setup = setup
        self.channels = channels
        self.sink = sink
        self.waiting: collections.deque[Any] = collections.deque()
        # A closed loop's conversations are claimed from the budget as a worker takes them, a
        # few at a time, under one lock with the taking (`take_claimed`); Ray's hub does the same
        # as it hands them out. So the run's requests are exactly the first ones of the
        # coordinator's sequence, as with one process, and every claimed one is sent (or, its
        # worker lost, failed). Taking one per hop and claiming when due cost a worker twice the
        # CPU of a request itself.
        self.claims_first_turns = channels.claims_first_turns or setup.load.mode == "concurrency"
        self.batch = take_batch(
            setup.concurrency_cap or 1, channels.take_most, channels.claims_first_turns
        )
        # One take in flight per worker: slots freed together wait for it rather than each
        # starting its own (over Ray those were many small round trips). It takes no more than
        # the slots waiting for one: a claimed conversation held for a busy slot would wait out
        # a whole stream while another worker's slots stand idle (2,000 streams at once: seen).
        # Ray's hub may hand a whole batch while the budget is far from its end (a round trip
        # there costs milliseconds of CPU, and held ones are taken by the next free slots).
        self.taking = asyncio.Lock()
        self.local = takes_locally(channels.work)
        self.wanting = 0
        # Ray's hub is a round trip of milliseconds: the next list is asked for while the slots
        # still have conversations, or they stand idle waiting for it (a worker's throughput was
        # its batch per round trip). Near the budget's end the hub hands a prefetch nothing
        # (fewest 0: no claimed conversation waits for a busy slot there).
        self.prefetching: set[asyncio.Task[None]] = set()

    def orphaned(self) -> bool:
        return self.setup.coordinator_pid is not None and os.getppid() != self.setup.coordinator_pid

    def stopped(self) -> bool:
        # Stopped by the coordinator, or orphaned: a coordinator killed outright (SIGKILL,
        # the OOM killer) sets no flag, and its workers must not go on loading the engine.
        return self.channels.stop.is_set() or self.orphaned()

    async def take(self, most: int, fewest: int | None = None) -> list[Any]:
        """What the coordinator has handed out, up to `most` items a take (a burst of
        arrivals costs one take, not one each); [] once stopped."""
        while not self.stopped():
            items = await take_awaited(self.channels.work, most, POLL_S, fewest)
            if items:
                return items
        return []

    async def ready(self) -> float:
        self.sink.flush()
        self.channels.results.put(("ready", self.setup.worker, None))
        while not await asyncio.to_thread(self.channels.go.wait, POLL_S):
            if self.stopped():
                break
        return self.channels.start_at.value or time.perf_counter()

    def claimed_within(self, most: int, wait: float) -> list[Any]:
        """Up to `most` conversations, each claimed as it is taken, waiting up to `wait` (0:
        only what can be had without blocking); [None] once the budget is spent (the end,
        for every slot that asks); [] when none came."""
        channels = self.channels
        # With a timeout: a worker killed while holding the lock must not hang the others.
        if not (channels.take_lock.acquire(True, wait) if wait else channels.take_lock.acquire(False)):
            return []
        try:
            left = channels.budget.left.value
            if left == 0:
                return [None]
            items = take_from(channels.work, most if left < 0 else min(most, left), wait)
            # A later turn's claim may have taken the last ones meanwhile: the conversations
            # not granted are the sequence's last taken, dropped.
            return (items[: channels.budget.claim_many(len(items))] or [None]) if items else []
        finally:
            channels.take_lock.release()

    def take_claimed(self, most: int) -> list[Any]:
        """`claimed_within`, waiting as long as it takes; [] once stopped."""
        while not self.stopped():
            items = self.claimed_within(most, POLL_S)
            if items:
                return items
        return []

    async def next_conversation(self) -> Conversation | None:
        waiting, batch = self.waiting, self.batch
        self.wanting += 1
        try:
            if not waiting:
                async with self.taking:
                    if not waiting:
                        fewest = max(1, min(batch, self.wanting))
                        if self.channels.claims_first_turns:
                            taken = await self.take(batch, fewest)
                        else:
                            # Claiming as it takes is this host's queue (the take lock): most
                            # takes find conversations waiting, and need no thread hop.
                            taken = self.claimed_within(fewest, 0) or (
                                await asyncio.to_thread(self.take_claimed, fewest)
                            )
                        waiting.extend(taken)
            if not waiting:  # stopped: the stop watcher ends the load meanwhile
                await asyncio.sleep(3600)
            handed = waiting.popleft()
            if handed is None:
                waiting.appendleft(None)  # the end, for every slot: no take more to learn it
            if (
                self.channels.claims_first_turns
                and not self.channels.work.near_end
                and len(waiting) < batch // 2
                and not self.taking.locked()
            ):
                self.prefetching.add(task := asyncio.create_task(self.prefetch()))
                task.add_done_callback(self.prefetching.discard)
            return handed
        finally:
            self.wanting -= 1

    async def prefetch(self) -> None:
        async with self.taking:
            if len(self.waiting) < self.batch // 2 and not self.stopped():
                self.waiting.extend(await take_awaited(self.channels.work, self.batch, 0, 0))

    async def schedule(self) -> AsyncIterator[tuple[float, Conversation]]:
        waiting = self.waiting
        while True:
            if not waiting and self.local:
                waiting.extend(take_from(self.channels.work, TAKE_MOST, 0))
            if not waiting:
                waiting.extend(await self.take(TAKE_MOST))
            item = waiting.popleft() if waiting else None
            if item is None:
                return
            yield item

    def plan(self) -> WorkerPlan:
        setup = self.setup
        return WorkerPlan(
            worker=setup.worker,
            origin=setup.origin,
            start_offsets=setup.start_offsets,
            concurrency_cap=setup.concurrency_cap,
            budget=self.channels.budget,
            ready=self.ready,
            next_conversation=self.next_conversation,
            schedule=self.schedule,
            claims_first_turns=self.claims_first_turns,
            claim_turn=self.channels.claim_turn,
        )


async def _load(setup: WorkerSetup, sink: _ResultSink, feed: _Feed) -> Any:
    """The worker's EngineLoad, its records flushed to the coordinator every `sink.every_s`."""

    async def flusher() -> None:
        while True:
            await asyncio.sleep(sink.every_s)
            sink.flush()

    flushing = asyncio.create_task(flusher())
    try:
        with quiet_gc():
            async with make_http_client(
                MAX_IN_FLIGHT, read_timeout_s=setup.settings.timeout_s
            ) as client:
                return await EngineLoad(
                    client,
                    setup.engine,
                    setup.workload,
                    setup.load,
                    sink=sink,
                    should_stop=feed.stopped,
                    settings=setup.settings,
                    plan=feed.plan(),
                ).run()
    finally:
        flushing.cancel()


def worker_process(setup: WorkerSetup, channels: Channels) -> None:
    """A worker's body (`multiprocessing` spawns it): one EngineLoad on its own fast loop,
    taking its requests and its start from the coordinator."""
    sink = _ResultSink(channels.results, setup.worker, channels.record_batch, channels.record_flush_s)
    feed = _Feed(setup, channels, sink)
    try:
        outcome = run_blocking(_load(setup, sink, feed))
        if feed.orphaned():
            channels.results.cancel_join_thread()  # nobody reads the results any more
            return
    except BaseException as error:  # noqa: BLE001 - the coordinator reports it
        sink.flush()
        channels.results.put(("failed", setup.worker, f"{type(error).__name__}: {error}"))
        raise SystemExit(1) from None
    sink.flush()
    check = outcome.checks[0] if outcome.checks else WorkerCheck(worker=setup.worker)
    end = WorkerEnd(
        check=check,
        max_streams=outcome.max_streams,
        connections_ahead=outcome.connections_ahead,
        unsupported=outcome.unsupported,
        cancelled=outcome.cancelled,
    )
    channels.results.put(("done", setup.worker, end))
    channels.results.close()
    channels.results.join_thread()
