"""The Ray transport (`RayTransport`) and its coordinator (`RayEngineLoad`): the hub, the
actors, their clocks; what any coordinator does is services/bench/pool's `Coordination`."""

from __future__ import annotations

import asyncio
import pickle
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from services.bench.arrivals import LoadSpec
from services.bench.load.outcome import EngineOutcome, WorkerEnd
from services.bench.load.transport import LoadJob, Placement
from services.bench.pool.coordination import Coordination
from services.bench.pool.plan import (
    POLL_S,
    RAY_TAKE_MOST,
    READY_TIMEOUT_S,
    closed_loop_reserve,
)
from services.bench.ray_pool.actor import LoadWorker
from services.bench.ray_pool.channels import CoordinatorChannels
from services.bench.ray_pool.cluster import check_reachable, connect, ray_workers
from services.bench.ray_pool.hub import Hub
from services.bench.stats import RequestRecord
from services.client import StreamClient
from services.core.errors import ShootoutError

#: Ray's start flag reaches the workers by polling: a start far enough ahead for all to see it.
RAY_START_MARGIN_S = 0.5
CLOCK_ROUND_TRIPS = 5
HUB_CONCURRENCY = 256
#: Only an open loop's arrivals are put in the hub (a closed loop's it draws itself), each no
#: sooner than LOOKAHEAD_S before its time: their times, not this, bound how far ahead they go.
OPEN_LOOP_BACKLOG = 100_000
WORKER_LOST = "worker_lost"
HEAD_RESOURCE = "node:__internal_head__"


@dataclass(frozen=True)
class ClockOffset:
    worker: int
    host: str
    node: str
    offset_s: float
    rtt_s: float


class RayEngineLoad:
    """One load over `workers` Ray actors of the cluster at `address`: the same `run()`,
    progress and `coordinate()` as the process pool's `PooledEngineLoad`."""

    def __init__(self, job: LoadJob, workers: int, address: str) -> None:
        self.shared = Coordination(job, workers)
        self.load: LoadSpec = job.load
        self.address = address
        self.offsets: list[ClockOffset] = []

    @property
    def done_count(self) -> int:
        return self.shared.done_count

    @property
    def measure_start(self) -> float:
        return self.shared.measure_start

    async def run(self) -> EngineOutcome:
        return await asyncio.to_thread(self.coordinate)

    def _measure_offsets(self, ray: Any, actors: list[Any]) -> list[ClockOffset]:
        offsets = []
        for index, actor in enumerate(actors):
            best: tuple[float, float, str, str] | None = None
            for _ in range(CLOCK_ROUND_TRIPS):
                sent = time.perf_counter()
                theirs, host, node = ray.get(actor.clock.remote(), timeout=READY_TIMEOUT_S)
                back = time.perf_counter()
                rtt = back - sent
                if best is None or rtt < best[0]:
                    best = (rtt, theirs - (sent + back) / 2, host, node)
            assert best is not None
            offsets.append(
                ClockOffset(worker=index, host=best[2], node=best[3], offset_s=best[1], rtt_s=best[0])
            )
        return offsets

    def coordinate(self) -> EngineOutcome:
        """The whole load, synchronously: join the cluster, start, feed, gather, merge."""
        ray = connect(self.address)
        try:
            return self._coordinate_on(ray)
        except ray.exceptions.RayError as error:  # the head or the hub gone: the run cannot go on
            raise ShootoutError(
                f"Ray: the cluster at {self.address[:80]} failed during the run: "
                f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
            ) from None

    def _coordinate_on(self, ray: Any) -> EngineOutcome:
        shared, load = self.shared, self.load
        closed = load.mode == "concurrency"
        # The hub on the head node: the one node a cluster cannot lose and go on.
        hub = (
            ray.remote(Hub)
            .options(num_cpus=0, max_concurrency=HUB_CONCURRENCY, resources={HEAD_RESOURCE: 0.001})
            .remote(
                OPEN_LOOP_BACKLOG,
                load.requests,
                closed_loop_reserve(load, shared.workers, RAY_TAKE_MOST),
                shared.closed_loop_conversations() if closed else None,
            )
        )
        worker_class = ray.remote(LoadWorker).options(
            num_cpus=1, max_concurrency=2, scheduling_strategy="SPREAD"
        )
        actors = [worker_class.remote() for _ in range(shared.workers)]
        channels = CoordinatorChannels(ray, hub)
        finished = threading.Event()
        # A closed loop's conversations the hub draws itself; an open loop's arrivals are fed.
        feeder = (
            None
            if closed
            else threading.Thread(
                target=shared.feed, args=(shared.feed_open, channels, finished), daemon=True
            )
        )
        done: dict[int, WorkerEnd] = {}
        ready: set[int] = set()
        try:
            try:
                self.offsets = self._measure_offsets(ray, actors)
            except ray.exceptions.GetTimeoutError:
                raise ShootoutError(
                    f"Ray: {shared.workers} load-generator workers did not start within "
                    f"{READY_TIMEOUT_S:.0f} s (each needs one CPU of the cluster)."
                ) from None
            origin = time.perf_counter()
            shared.outcome.origin = origin
            shared.outcome.wall_start = time.time()
            runs = {}
            for setup, clock in zip(shared.setups(origin), self.offsets, strict=True):
                shifted = replace(setup, origin=setup.origin + clock.offset_s, coordinator_pid=None)
                runs[actors[setup.worker].run.remote(shifted, hub, clock.offset_s)] = setup.worker
            if feeder is not None:
                feeder.start()
            ready_by = time.monotonic() + READY_TIMEOUT_S
            while len(ready) + len(shared.failures) < len(actors):
                self._pump(ray, hub, runs, ready, done)
                if self._stopping(ray, hub, channels) or time.monotonic() > ready_by:
                    break
            if not shared.failures and not channels.stop.is_set():
                shared.measure_start = time.perf_counter() + RAY_START_MARGIN_S
                deadline = shared.measure_start + load.duration_s if load.duration_s else 0.0
                channels.start_at.value = shared.measure_start
                ray.get(hub.set.remote(go=True, start_at=shared.measure_start, deadline=deadline))
            else:
                channels.stop.set()
                ray.get(hub.set.remote(stop=True, go=True))
            channels.go.set()
            while runs:
                self._pump(ray, hub, runs, ready, done)
                self._stopping(ray, hub, channels)
            self._pump(ray, hub, runs, ready, done)
            sent = ray.get(hub.counts.remote())
        finally:
            finished.set()
            channels.stop.set()
            channels.go.set()
            if feeder is not None and feeder.ident is not None:
                feeder.join(timeout=5)
            for actor in [*actors, hub]:
                ray.kill(actor)
        if shared.failures and not done:
            raise ShootoutError("The load's Ray workers failed: " + "; ".join(shared.failures))
        outcome = shared.finish(done)
        outcome.generator["ray"] = self.address
        outcome.generator["hosts"] = [
            {
                "worker": clock.worker,
                "host": clock.host,
                "node": clock.node[:12],
                "clock_offset_s": clock.offset_s,
                "rtt_s": clock.rtt_s,
                "requests": sent.get(clock.worker, 0),
            }
            for clock in self.offsets
        ]
        return outcome

    def _stopping(self, ray: Any, hub: Any, channels: CoordinatorChannels) -> bool:
        if not channels.stop.is_set() and self.shared.should_stop():
            self.shared.outcome.cancelled = True
            channels.stop.set()
            hub.set.remote(stop=True)
        return channels.stop.is_set()

    def _pump(
        self, ray: Any, hub: Any, runs: dict[Any, int], ready: set[int], done: dict[int, WorkerEnd]
    ) -> None:
        """The records and messages the hub holds; the workers that ended (a lost one's
        requests end as failed)."""
        finished, _ = ray.wait(list(runs), num_returns=len(runs), timeout=POLL_S) if runs else ([], [])
        self._drain(ray, hub, ready, done)
        for ref in finished:
            worker = runs.pop(ref)
            try:
                ray.get(ref)
            except ray.exceptions.RayError as error:
                clock = self.offsets[worker]
                self._drain(ray, hub, ready, done)
                lost = [(index, pickle.loads(blob)) for index, blob in ray.get(hub.lost.remote(worker))]
                self._fail_lost(worker, lost)
                self.shared.failures.append(
                    f"worker {worker} on {clock.host}: lost ({type(error).__name__})"
                )
                ready.add(worker)

    def _drain(self, ray: Any, hub: Any, ready: set[int], done: dict[int, WorkerEnd]) -> None:
        for kind, worker, payload in ray.get(hub.drain.remote()):
            if kind == "records":
                payload = pickle.loads(payload[2])  # packed by the worker (WorkerChannels.put)
            self.shared.handle(kind, worker, payload, ready, done)

    def _fail_lost(self, worker: int, items: list[Any]) -> None:
        shared, clock = self.shared, self.offsets[worker]
        for turn_index, item in items:
            # Open loop: the item's time counts from the start; records count from the origin.
            scheduled = (
                shared.measure_start - shared.outcome.origin + item[0]
                if isinstance(item, tuple)
                else None
            )
            record = RequestRecord(
                engine=shared.engine.name,
                index=turn_index,
                ok=False,
                scheduled_s=scheduled,
                error_class=WORKER_LOST,
                error=f"the load-generator worker on {clock.host} was lost mid-request (its Ray node left)",
                step=shared.step,
            )
            shared.add(record)


class RayTransport:
    """Ray actors over a cluster's nodes (`--ray ADDRESS`)."""

    name = "ray"

    def carries(self, placement: Placement) -> bool:
        return bool(placement.ray_address)

    def check(self, placement: Placement) -> None:
        check_reachable(placement.ray_address)

    def start(self, job: LoadJob, client: StreamClient) -> RayEngineLoad:
        return self._load(job)

    def execute(self, job: LoadJob) -> EngineOutcome:
        return self._load(job).coordinate()

    def _load(self, job: LoadJob) -> RayEngineLoad:
        address = job.placement.ray_address
        return RayEngineLoad(job, ray_workers(address, job.placement.workers), address)
