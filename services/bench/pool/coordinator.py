"""The worker-process transport (`ProcessTransport`) and its coordinator (`PooledEngineLoad`):
starts the workers, feeds them and gathers their records through this host's
multiprocessing queues; what any coordinator does is `Coordination`'s."""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import queue
import threading
import time

from services.bench.arrivals import LoadSpec
from services.bench.load.outcome import EngineOutcome, WorkerEnd
from services.bench.load.transport import LoadJob, Placement
from services.bench.pool.channels import Channels, bare_main
from services.bench.pool.coordination import Coordination
from services.bench.pool.plan import (
    FEED_CHUNK,
    POLL_S,
    READY_TIMEOUT_S,
    START_MARGIN_S,
    conversations_ahead,
)
from services.bench.pool.worker import worker_process
from services.client import StreamClient
from services.core.errors import ShootoutError


class PooledEngineLoad:
    """One load over `workers` processes of this host: an EngineLoad's `run()` and progress
    (`load`, `done_count`, `measure_start`) for the Benchmark, `coordinate()` for a caller
    without an event loop."""

    def __init__(self, job: LoadJob, workers: int) -> None:
        self.shared = Coordination(job, workers)
        self.load: LoadSpec = job.load

    @property
    def done_count(self) -> int:
        return self.shared.done_count

    @property
    def measure_start(self) -> float:
        return self.shared.measure_start

    async def run(self) -> EngineOutcome:
        return await asyncio.to_thread(self.coordinate)

    def coordinate(self) -> EngineOutcome:
        """The whole load, synchronously: start, feed, gather, merge."""
        shared = self.shared
        context = multiprocessing.get_context("spawn")
        load = self.load
        closed = load.mode == "concurrency"
        # Closed loop: about twice the slots' conversations ahead, most of them in lists (the
        # last ones of a budget go one by one through the same few entries).
        backlog = max(8, math.ceil(conversations_ahead(load) / FEED_CHUNK)) if closed else 100_000
        channels = Channels(context, load.requests, backlog)
        origin = time.perf_counter()
        shared.outcome.origin = origin
        shared.outcome.wall_start = time.time()
        processes = [
            context.Process(
                target=worker_process,
                args=(setup, channels),
                daemon=True,
                name=f"shootout-bench-worker-{setup.worker}",
            )
            for setup in shared.setups(origin)
        ]
        finished = threading.Event()
        feeder = threading.Thread(
            target=shared.feed,
            args=(shared.feed_closed if closed else shared.feed_open, channels, finished),
            daemon=True,
        )
        with bare_main():
            for process in processes:
                process.start()
        feeder.start()
        done: dict[int, WorkerEnd] = {}
        ready: set[int] = set()
        try:
            ready_by = time.monotonic() + READY_TIMEOUT_S
            while len(ready) + len(shared.failures) < len(processes):
                self._take(channels, ready, done)
                self._check_stop(channels)
                # A worker that died starting (an import error, the OOM killer) never reports.
                dead = [
                    index
                    for index, process in enumerate(processes)
                    if not process.is_alive() and index not in ready
                ]
                if dead and channels.results.empty():
                    shared.failures += [
                        f"worker {index}: exited while starting (code {processes[index].exitcode})"
                        for index in dead
                        if not any(f.startswith(f"worker {index}:") for f in shared.failures)
                    ]
                if channels.stop.is_set() or time.monotonic() > ready_by:
                    break
            if not shared.failures and not channels.stop.is_set():
                shared.measure_start = time.perf_counter() + START_MARGIN_S
                channels.budget.set_deadline(
                    shared.measure_start + load.duration_s if load.duration_s else None
                )
                channels.start_at.value = shared.measure_start
            else:
                channels.stop.set()
            channels.go.set()
            while len(done) < len(processes):
                self._take(channels, ready, done)
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
            reported = any(failure.startswith(f"worker {index}:") for failure in shared.failures)
            if process.exitcode not in (0, None) and index not in done and not reported:
                shared.failures.append(f"worker {index}: exited with code {process.exitcode}")
        if shared.failures and not done:
            raise ShootoutError("The load's worker processes failed: " + "; ".join(shared.failures))
        return shared.finish(done)

    def _check_stop(self, channels: Channels) -> None:
        if not channels.stop.is_set() and self.shared.should_stop():
            self.shared.outcome.cancelled = True
            channels.stop.set()

    def _take(self, channels: Channels, ready: set[int], done: dict[int, WorkerEnd]) -> None:
        try:
            kind, worker, payload = channels.results.get(timeout=POLL_S)
        except queue.Empty:
            return
        self.shared.handle(kind, worker, payload, ready, done)


class ProcessTransport:
    """Worker processes of this host (`--workers N`, N > 1)."""

    name = "processes"

    def carries(self, placement: Placement) -> bool:
        return placement.workers > 1 and not placement.ray_address

    def check(self, placement: Placement) -> None:
        return None

    def start(self, job: LoadJob, client: StreamClient) -> PooledEngineLoad:
        return PooledEngineLoad(job, job.placement.workers)

    def execute(self, job: LoadJob) -> EngineOutcome:
        return PooledEngineLoad(job, job.placement.workers).coordinate()
