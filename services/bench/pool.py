"""One load spread over several worker processes on this host (`--workers N`).

Why: one Python process reads at most ~100k streamed tokens/s on a core; past that the
event loop falls behind and TTFT and ITL inflate (the self-check says so). Several
processes, each with its own event loop and connection pool, add up.

Exact meaning with N workers:
- the coordinator (this process) draws the whole seeded schedule once, as one process
  would: the conversations in order and, in open loop, their arrival offsets (Poisson,
  gamma, constant or the trace's times). It hands them out through one shared queue a
  little ahead of time (`LOOKAHEAD_S`); whichever worker is free sleeps until the instant
  and sends. So a gamma process stays a gamma process and a trace replays at its times.
- the clock: Linux's perf_counter is CLOCK_MONOTONIC, one clock for every process of the
  host, so the coordinator's origin and start instant mean the same in every worker and
  the records' times need no shifting.
- a concurrency of C is C in total: the closed loop's C slots are dealt out to the workers
  (with the ramp's start offsets), a rate cap of C is split into shares that sum to C.
- one budget of requests (and one deadline) shared by all, claimed atomically.
- records come back to the coordinator, which hands them to the run's one sink (the
  database writer stays one); summaries are computed from all raw records, and the
  self-check merges every worker's raw samples.
- cancel: the coordinator polls the run's stop flag and sets a shared event that every
  worker watches like one process watches its own; in-flight requests end as cancelled.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import math
import multiprocessing
import os
import queue
import sys
import threading
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from services.bench.arrivals import LoadSpec, worker_start_offsets
from services.bench.selfcheck import CPU_SHARE_LIMIT, WorkerCheck, report
from services.bench.spec import EngineTarget
from services.bench.stats import RequestRecord
from services.bench.workloads import Conversation, PromptText, WorkloadSpec, iter_conversations

#: Open-loop requests reach a worker this long before their instant (a queue hop costs
#: tens of microseconds; the margin covers a busy worker's loop too).
LOOKAHEAD_S = 0.25
START_MARGIN_S = 0.05
RECORD_BATCH = 64
#: The coordinator hands conversations out in lists of up to this many (one hub round trip
#: each over Ray); open-loop arrivals due within FEED_WINDOW_S of the first go together.
FEED_CHUNK = 64
FEED_WINDOW_S = 0.01
#: Items a worker takes from the shared queue in one thread hop at most.
TAKE_MOST = 32
RECORD_FLUSH_S = 0.1
POLL_S = 0.2
#: How long workers may take to start, connect ahead and warm up before the run fails.
READY_TIMEOUT_S = 120.0
MAX_WORKERS = 64
#: --workers auto: one worker per this many streams, as a first guess (then more when a
#: step was client-bound, see `auto_workers`).
STREAMS_PER_WORKER = 512


def usable_cores() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def auto_workers(
    load: LoadSpec, previous: dict[str, Any] | None = None, current: int | None = None
) -> int:
    """The worker count `--workers auto` uses for a load: a first guess from the streams
    it will hold, then, after a step whose generator was client-bound (the self-check's
    signals), as many more as the busiest worker's CPU share asks for, up to the cores
    (one left for the coordinator and the writer where there are several)."""
    cores = usable_cores()
    ceiling = max(1, cores - 1) if cores > 2 else cores
    streams = load.concurrency or max(1, math.ceil((load.rate or 1.0) * 2))
    guess = max(1, min(ceiling, math.ceil(streams / STREAMS_PER_WORKER)))
    if previous is None or current is None:
        return guess
    if not previous.get("client_bound"):
        return max(guess, current)
    busiest = max(previous.get("cpu_share") or [0.0])
    wanted = math.ceil(current * max(busiest, CPU_SHARE_LIMIT) / (0.6 * 1.0)) if busiest else current * 2
    return max(guess, min(ceiling, max(current + 1, wanted)))


def split(total: int, parts: int) -> list[int]:
    """`total` dealt into `parts` shares that sum to it (the first ones one larger)."""
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


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
class _WorkerSetup:
    worker: int
    engine: EngineTarget
    workload: WorkloadSpec
    load: LoadSpec
    start_offsets: list[float]
    concurrency_cap: int | None
    origin: float
    salt: str
    text: PromptText
    timeout_s: float
    temperature: float | None
    step: int | None
    connect_ahead: bool
    #: Extra headers per request index; it travels to the workers, so a picklable callable
    #: (a module-level function or a functools.partial of one).
    request_headers: Callable[[int], dict[str, str]] | None
    #: The parent to watch (a worker whose coordinator is gone stops); None where the
    #: transport watches for itself (Ray actors: services/bench/ray_pool.py).
    coordinator_pid: int | None


@contextmanager
def _bare_main() -> Iterator[None]:
    """`spawn` re-runs the parent's __main__ in each child; the workers need none of it, and
    a main that is a script (a page under Streamlit's AppTest, a benchmark) would run again
    there. While the workers start, __main__ is an empty module."""
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


class _Channels:
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
        #: Records per message back (a queue put is cheap; a hub call is not: ray_pool.py).
        self.record_batch = RECORD_BATCH


# ---------------------------------------------------------------------------------------
# The worker process
# ---------------------------------------------------------------------------------------


class _ResultSink:
    """Records back to the coordinator in small batches (one pickling per batch)."""

    def __init__(self, results: Any, worker: int, most: int = RECORD_BATCH) -> None:
        self.results = results
        self.worker = worker
        self.most = most
        self.batch: list[RequestRecord] = []
        self.flushed = time.perf_counter()

    def add(self, record: RequestRecord) -> None:
        self.batch.append(record)
        if len(self.batch) >= self.most or time.perf_counter() - self.flushed >= RECORD_FLUSH_S:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.results.put(("records", self.worker, self.batch))
            self.batch = []
        self.flushed = time.perf_counter()


def take_from(work: Any, most: int, timeout: float, fewest: int | None = None) -> list[Any]:
    """Up to `most` items of a multiprocessing queue, waiting `timeout` for the first; a
    transport of its own (Ray's) offers `take(most, timeout, fewest)` instead (it hands only
    `fewest`, the slots waiting, once the budget nears its end)."""
    if hasattr(work, "take"):
        return work.take(most, timeout, fewest)
    try:
        items = [work.get(timeout=timeout)]
    except queue.Empty:
        return []
    while len(items) < most and items[-1] is not None:
        try:
            items.append(work.get_nowait())
        except queue.Empty:
            break
    return items


def _worker_process(setup: _WorkerSetup, channels: _Channels) -> None:
    """A worker's body (`multiprocessing` spawns it): one EngineLoad on its own fast loop,
    taking its requests and its start from the coordinator."""
    from services.bench.runner import MAX_IN_FLIGHT, EngineLoad, WorkerPlan, quiet_gc
    from services.client import make_http_client, run_blocking

    sink = _ResultSink(channels.results, setup.worker, channels.record_batch)

    def orphaned() -> bool:
        return setup.coordinator_pid is not None and os.getppid() != setup.coordinator_pid

    def stopped() -> bool:
        # Stopped by the coordinator, or orphaned: a coordinator killed outright (SIGKILL,
        # the OOM killer) sets no flag, and its workers must not go on loading the engine.
        return channels.stop.is_set() or orphaned()

    def take(most: int, fewest: int | None = None) -> list[Any]:
        """What the coordinator has handed out, up to `most` items in one thread hop (a
        burst of arrivals costs one hop, not one each); [] once stopped."""
        while not stopped():
            items = take_from(channels.work, most, POLL_S, fewest)
            if items:
                return items
        return []

    waiting: collections.deque[Any] = collections.deque()

    async def ready() -> float:
        sink.flush()
        channels.results.put(("ready", setup.worker, None))
        while not await asyncio.to_thread(channels.go.wait, POLL_S):
            if stopped():
                break
        return channels.start_at.value or time.perf_counter()

    # A closed loop's conversations are claimed from the budget as a worker takes them, a
    # few at a time, under one lock with the taking (`take_claimed`); Ray's hub does the same
    # as it hands them out. So the run's requests are exactly the first ones of the
    # coordinator's sequence, as with one process, and every claimed one is sent (or, its
    # worker lost, failed). Taking one per hop and claiming when due cost a worker twice the
    # CPU of a request itself.
    claims_first_turns = channels.claims_first_turns or setup.load.mode == "concurrency"
    batch = max(1, min(TAKE_MOST, (setup.concurrency_cap or 1) // 4))

    def take_claimed(most: int) -> list[Any]:
        """Up to `most` conversations, each claimed as it is taken; [None] once the budget
        is spent (the end, for every slot that asks); [] once stopped."""
        while not stopped():
            # With a timeout: a worker killed while holding the lock must not hang the others.
            if not channels.take_lock.acquire(timeout=POLL_S):
                continue
            try:
                left = channels.budget.left.value
                if left == 0:
                    return [None]
                items = take_from(channels.work, most if left < 0 else min(most, left), POLL_S)
                if items:
                    # A later turn's claim may have taken the last ones meanwhile: the
                    # conversations not granted are the sequence's last taken, dropped.
                    return items[: channels.budget.claim_many(len(items))] or [None]
            finally:
                channels.take_lock.release()
        return []

    # One take in flight per worker: slots freed together wait for it rather than each
    # starting its own (over Ray those were many small round trips). It takes no more than
    # the slots waiting for one: a claimed conversation held for a busy slot would wait out
    # a whole stream while another worker's slots stand idle (2,000 streams at once: seen).
    # Ray's hub may hand a whole batch while the budget is far from its end (a round trip
    # there costs milliseconds of CPU, and held ones are taken by the next free slots).
    taking = asyncio.Lock()
    wanting = 0

    async def next_conversation() -> Conversation | None:
        nonlocal wanting
        wanting += 1
        try:
            if not waiting:
                async with taking:
                    if not waiting:
                        fewest = max(1, min(batch, wanting))
                        if channels.claims_first_turns:
                            taken = await asyncio.to_thread(take, batch, fewest)
                        else:
                            taken = await asyncio.to_thread(take_claimed, fewest)
                        waiting.extend(taken)
            if not waiting:  # stopped: the stop watcher ends the load meanwhile
                await asyncio.sleep(3600)
            return waiting.popleft()
        finally:
            wanting -= 1

    async def schedule() -> AsyncIterator[tuple[float, Conversation]]:
        while True:
            if not waiting:
                waiting.extend(await asyncio.to_thread(take, TAKE_MOST))
            item = waiting.popleft() if waiting else None
            if item is None:
                return
            yield item

    async def flusher() -> None:
        while True:
            await asyncio.sleep(RECORD_FLUSH_S)
            sink.flush()

    async def main() -> Any:
        plan = WorkerPlan(
            worker=setup.worker,
            origin=setup.origin,
            start_offsets=setup.start_offsets,
            concurrency_cap=setup.concurrency_cap,
            budget=channels.budget,
            ready=ready,
            next_conversation=next_conversation,
            schedule=schedule,
            claims_first_turns=claims_first_turns,
            claim_turn=channels.claim_turn,
        )
        flushing = asyncio.create_task(flusher())
        try:
            with quiet_gc():
                async with make_http_client(MAX_IN_FLIGHT, read_timeout_s=setup.timeout_s) as client:
                    return await EngineLoad(
                        client,
                        setup.engine,
                        setup.workload,
                        setup.load,
                        sink=sink,
                        should_stop=stopped,
                        salt=setup.salt,
                        text=setup.text,
                        timeout_s=setup.timeout_s,
                        temperature=setup.temperature,
                        step=setup.step,
                        connect_ahead=setup.connect_ahead,
                        request_headers=setup.request_headers,
                        plan=plan,
                    ).run()
        finally:
            flushing.cancel()

    try:
        outcome = run_blocking(main())
        if orphaned():
            channels.results.cancel_join_thread()  # nobody reads the results any more
            return
    except BaseException as error:  # noqa: BLE001 - the coordinator reports it
        sink.flush()
        channels.results.put(("failed", setup.worker, f"{type(error).__name__}: {error}"))
        raise SystemExit(1) from None
    sink.flush()
    check = outcome.checks[0] if outcome.checks else WorkerCheck(worker=setup.worker)
    channels.results.put(
        (
            "done",
            setup.worker,
            {
                "check": check,
                "max_streams": outcome.max_streams,
                "connections_ahead": outcome.connections_ahead,
                "unsupported": outcome.unsupported,
                "cancelled": outcome.cancelled,
            },
        )
    )
    channels.results.close()
    channels.results.join_thread()


# ---------------------------------------------------------------------------------------
# The coordinator
# ---------------------------------------------------------------------------------------


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
        salt: str = "",
        text: PromptText | None = None,
        timeout_s: float = 600.0,
        temperature: float | None = 0.0,
        step: int | None = None,
        connect_ahead: bool = True,
        request_headers: Callable[[int], dict[str, str]] | None = None,
    ) -> None:
        from services.bench.runner import EngineOutcome

        self.engine, self.workload, self.load = engine, workload, load
        self.sink, self.should_stop, self.salt = sink, should_stop, salt
        self.text = text or PromptText()
        self.request_headers = request_headers
        self.timeout_s, self.temperature, self.step, self.connect_ahead = (
            timeout_s,
            temperature,
            step,
            connect_ahead,
        )
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
    def _setups(self, origin: float) -> list[_WorkerSetup]:
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
            _WorkerSetup(
                worker=index,
                engine=self.engine,
                workload=self.workload,
                load=replace(load, concurrency=caps[index], warmup_requests=warmups[index]),
                start_offsets=slots[index],
                concurrency_cap=caps[index],
                origin=origin,
                salt=self.salt,
                text=self.text,
                timeout_s=self.timeout_s,
                temperature=self.temperature,
                step=self.step,
                connect_ahead=self.connect_ahead,
                request_headers=self.request_headers,
                coordinator_pid=os.getpid(),
            )
            for index in range(count)
        ]

    def _conversations(self) -> Iterator[Conversation]:
        return iter_conversations(self.workload, salt=self.salt, text=self.text)

    # -- feeding -----------------------------------------------------------------------
    def _put(self, channels: _Channels, item: Any, finished: threading.Event) -> bool:
        while not finished.is_set() and not channels.stop.is_set():
            try:
                channels.work.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _put_all(self, channels: _Channels, items: list[Any], finished: threading.Event) -> bool:
        """`items` in order; a transport of its own (Ray's hub) takes a list in one round trip."""
        put_many = getattr(channels.work, "put_many", None)
        if put_many is None:
            return all(self._put(channels, item, finished) for item in items)
        while items:
            if finished.is_set() or channels.stop.is_set():
                return False
            items = items[put_many(items, POLL_S) :]
        return True

    def _feed(
        self,
        body: Callable[[_Channels, threading.Event], None],
        channels: _Channels,
        finished: threading.Event,
    ) -> None:
        try:
            body(channels, finished)
        except Exception as error:  # noqa: BLE001 - workers starved of requests must stop, and say why
            self.failures.append(
                f"coordinator: drawing the requests failed: {type(error).__name__}: {error}"
            )
            channels.stop.set()

    def _feed_closed(self, channels: _Channels, finished: threading.Event) -> None:
        # The closed loop's conversations in order; each slot takes the next one it claims.
        conversations = self._conversations()
        while chunk := list(itertools.islice(conversations, FEED_CHUNK)):
            if not self._put_all(channels, chunk, finished):
                return

    def _feed_open(self, channels: _Channels, finished: threading.Event) -> None:
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
                if not self._put_all(channels, pending, finished):
                    return
                pending = []
            if not pending and channels.budget.exhausted():
                break
            if wait > FEED_WINDOW_S and finished.wait(wait):
                return
            pending.append((offset, conversation))
        if not self._put_all(channels, [*pending, *([None] * self.workers)], finished):
            return

    # -- running -----------------------------------------------------------------------
    def _coordinate(self) -> Any:
        context = multiprocessing.get_context("spawn")
        load = self.load
        closed = load.mode == "concurrency"
        backlog = 2 * (load.concurrency or 64) + 64 if closed else 100_000
        channels = _Channels(context, load.requests, backlog)
        origin = time.perf_counter()
        self.outcome.origin = origin
        self.outcome.wall_start = time.time()
        processes = [
            context.Process(
                target=_worker_process,
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
        with _bare_main():
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

    def _check_stop(self, channels: _Channels) -> None:
        if not channels.stop.is_set() and self.should_stop():
            self.outcome.cancelled = True
            channels.stop.set()

    def _take(
        self, channels: _Channels, ready: set[int], done: dict[int, dict[str, Any]], processes: list[Any]
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
