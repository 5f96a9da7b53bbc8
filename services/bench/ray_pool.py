"""One load spread over the nodes of a Ray cluster (`--ray ADDRESS`), an optional extra
(requirements-ray.txt).

The same worker body as on one host (services/bench/pool.py `_worker_process`) runs in Ray
actors spread over the cluster; only the transport differs:
- a hub actor (next to the coordinator where Ray allows) holds what pool.py keeps in
  multiprocessing objects: the work queue the coordinator fills with its one seeded
  schedule, the shared budget, the stop and start flags, and the records coming back.
  Workers take their requests in batches (`TAKE_MOST`, one per hop in closed loop, as on one
  host) and stream their records back in batches.
- the budget: the hub claims each conversation's first turn as it hands the conversation
  out, in the coordinator's order, so a batch of open-loop arrivals (those due within
  pool.py's `LOOKAHEAD_S`) costs one round trip, not one per request on the event loop;
  once the budget is spent a take answers the end (None) and no later conversation leaves.
  The run's requests are still exactly the first ones of the sequence, at their instants.
  A later turn of a conversation claims when it is due, by a round trip the worker awaits
  (none where the run has no request budget, only a deadline, which each worker checks on
  its own clock).
- the clock: hosts do not share CLOCK_MONOTONIC. Before the run the coordinator asks each
  actor for its clock a few times and keeps the round trip with the least delay: offset =
  worker clock - the coordinator's clock at the round trip's midpoint (error at most RTT/2).
  Each worker gets the origin, the start instant and the deadline shifted into its own clock,
  so the records' times (seconds from the origin) line up across hosts; TTFT and ITL are
  differences on one worker's clock and need no shifting. The offsets and round trips are
  reported in the summary's generator block (`hosts`).
- a node lost mid-run: its actor's call fails; the requests it had taken and not reported
  end as failed with the class `worker_lost`, the other workers go on.

Each node needs this checkout at the same path with the same packages (the actors import
`services` from there, PYTHONPATH is set for them).
"""

from __future__ import annotations

import pickle
import queue
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from services.bench.pool import (
    POLL_S,
    READY_TIMEOUT_S,
    TAKE_MOST,
    PooledEngineLoad,
    _WorkerSetup,
)
from services.bench.stats import RequestRecord
from services.errors import ShootoutError

#: Ray's start flag reaches the workers by polling: a start far enough ahead for all to see it.
RAY_START_MARGIN_S = 0.5
STATE_POLL_S = 0.05
CLOCK_ROUND_TRIPS = 5
CONNECT_PROBE_S = 3.0
HUB_CONCURRENCY = 256
WORKER_LOST = "worker_lost"
HEAD_RESOURCE = "node:__internal_head__"
REPO_ROOT = str(Path(__file__).resolve().parents[2])
_joined = ""


class RayUnavailable(ShootoutError):
    """Ray is not installed, or its cluster cannot be reached."""


@dataclass(frozen=True)
class ClockOffset:
    worker: int
    host: str
    node: str
    offset_s: float
    rtt_s: float


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable("Ray is not installed: pip install -r requirements-ray.txt") from None
    return ray


def _probe(address: str) -> None:
    """ray.init waits a minute or more on an address nobody answers; a TCP connect says so
    in seconds."""
    if address in ("auto", "local") or address.startswith("ray://"):
        target = address.removeprefix("ray://")
        if target in ("auto", "local"):
            return
    else:
        target = address
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"Ray address {address[:80]!r}: expected HOST:PORT (or ray://HOST:PORT).")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_PROBE_S).close()
    except OSError as error:
        raise RayUnavailable(
            f"Ray at {address[:80]} is unreachable: {error.strerror or error}"
        ) from None


def check_reachable(address: str) -> None:
    """Ray installed and the address answering, without joining the cluster (the web server
    checks a form this way; the run's worker process joins)."""
    _ray()
    _probe(address)


def connect(address: str) -> Any:
    """The `ray` module, connected to the cluster at `address` (once per process)."""
    global _joined
    ray = _ray()
    if ray.is_initialized() and _joined == address:
        return ray
    _probe(address)
    if ray.is_initialized():
        ray.shutdown()  # another cluster: a process is a driver of one at a time
    try:
        ray.init(
            address=address,
            log_to_driver=False,
            logging_level="ERROR",
            configure_logging=False,
            runtime_env={"env_vars": {"PYTHONPATH": REPO_ROOT}},
        )
    except Exception as error:  # noqa: BLE001 - Ray raises many kinds; the user needs one line
        raise RayUnavailable(
            f"Ray at {address[:80]} could not be joined: {type(error).__name__}: {error}"
        ) from None
    _joined = address
    return ray


def cluster_nodes(address: str) -> list[dict[str, Any]]:
    return [node for node in connect(address).nodes() if node.get("Alive")]


def ray_workers(address: str, workers: int) -> int:
    """The actor count: as asked, or with 1 or auto one per live node of the cluster."""
    return workers if workers > 1 else max(1, len(cluster_nodes(address)))


# ---------------------------------------------------------------------------------------
# The actors
# ---------------------------------------------------------------------------------------


class Hub:
    """The shared state of one pooled load (a threaded Ray actor).

    Conversations and records pass through it pickled (`_pack`, `_WorkerChannels.put`): the
    hub reads only what it needs beside each blob (turn indices, how many records were
    measured), since unpickling and pickling every item again here cost most of its CPU."""

    def __init__(self, backlog: int, requests: int | None, reserve: int = 0) -> None:
        self.work: deque[Any] = deque()
        self.backlog = backlog
        #: With no more than this many requests left, a take hands only the slots waiting.
        self.reserve = reserve
        self.space = threading.Condition()
        self.left = -1 if requests is None else requests
        self.results: deque[Any] = deque()
        self.flags: dict[str, Any] = {"stop": False, "go": False, "start_at": 0.0, "deadline": 0.0}
        #: Per worker: the turns taken and not reported yet (for a lost node).
        self.taken: dict[int, dict[int, tuple[Any, int]]] = {}
        self.reported: dict[int, int] = {}

    def put_many(self, items: list[Any], timeout: float) -> int:
        with self.space:
            if len(self.work) >= self.backlog:
                self.space.wait(timeout)
            accepted = items[: max(0, self.backlog - len(self.work))]
            self.work.extend(accepted)
            self.space.notify_all()
            return len(accepted)

    def take(self, worker: int, most: int, timeout: float, fewest: int | None = None) -> list[Any]:
        """Up to `most` items (`fewest`, the worker's slots waiting, once no more than
        `reserve` requests are left), each conversation's first turn claimed from the budget;
        a spent budget ends the list with None (the end of the worker's schedule)."""
        with self.space:
            if fewest is not None and 0 <= self.left <= self.reserve:
                most = min(most, fewest)
            if not self.work:
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
        return [None if item is None else item[0] for item in items]

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
        first: dict[int, tuple[int, Any]] = {}
        for turn_index, (item, conversation_id) in sorted(self.taken.pop(worker, {}).items()):
            first.setdefault(conversation_id, (turn_index, item))
        return list(first.values())

    def set(self, **flags: Any) -> None:
        self.flags.update(flags)
        if flags.get("stop"):
            with self.space:
                self.space.notify_all()

    def state(self) -> dict[str, Any]:
        return dict(self.flags)


class LoadWorker:
    """One load-generator worker on some node: pool.py's worker body over the hub."""

    def clock(self) -> tuple[float, str, str]:
        import ray

        return time.perf_counter(), socket.gethostname(), ray.get_runtime_context().get_node_id()

    def run(self, setup: _WorkerSetup, hub: Any, offset_s: float) -> bool:
        from services.bench.pool import _worker_process

        channels = _WorkerChannels(hub, setup.worker, offset_s, limited=setup.load.requests is not None)
        try:
            _worker_process(setup, channels)  # type: ignore[arg-type]  # duck-typed: the pool's channel methods
        except SystemExit:
            return False
        finally:
            channels.join_thread()  # a failed worker's last records and its reason, too
            channels.close()
        return True


# ---------------------------------------------------------------------------------------
# The channels, as pool.py's worker and coordinator use them
# ---------------------------------------------------------------------------------------


class _Value:
    def __init__(self, value: float = 0.0) -> None:
        self.value = value


class _WorkerChannels:
    """pool.py's `_Channels` for a worker in an actor: the hub's flags polled by a thread
    (a hub that no longer answers stops the worker: its coordinator is gone), the times
    shifted into this host's clock."""

    #: The hub claims first turns as it hands them out (`Hub.take`).
    claims_first_turns = True
    #: Each message is a hub call (most of a millisecond of CPU on a small VM): fewer, larger.
    record_batch = 256

    def __init__(self, hub: Any, worker: int, offset_s: float, *, limited: bool) -> None:
        import ray

        self.ray, self.hub, self.worker, self.offset_s = ray, hub, worker, offset_s
        #: A budget of requests to share (else only the deadline bounds the run).
        self.limited = limited
        self.stop = threading.Event()
        self.go = threading.Event()
        self.start_at = _Value()
        self.work = self
        self.results = self
        self.budget = self
        self._deadline = 0.0
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
            self._closed.wait(STATE_POLL_S if not self.go.is_set() else POLL_S)

    # work
    def take(self, most: int, timeout: float, fewest: int | None = None) -> list[Any]:
        blobs = self.ray.get(self.hub.take.remote(self.worker, most, timeout, fewest))
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


def _pack(item: Any) -> Any:
    """A work item as the hub holds it: (pickled item, its turn indices, conversation id)."""
    if item is None:
        return None
    conversation = item[1] if isinstance(item, tuple) else item
    return (
        pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL),
        tuple(turn.index for turn in conversation.turns),
        conversation.id,
    )


class _HubWork:
    def __init__(self, ray: Any, hub: Any) -> None:
        self.ray, self.hub = ray, hub
        #: Packed items the hub had no room for yet (the feeder offers them again).
        self._packed: dict[int, tuple[Any, Any]] = {}

    def _packed_once(self, item: Any) -> Any:
        held = self._packed.get(id(item))
        if held is None or held[0] is not item:
            held = (item, _pack(item))
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


class _HubBudget:
    def __init__(self, ray: Any, hub: Any) -> None:
        self.ray, self.hub = ray, hub

    def exhausted(self) -> bool:
        return self.ray.get(self.hub.exhausted.remote())


class _CoordinatorChannels:
    """pool.py's `_Channels` as its feeders use them, over the hub."""

    def __init__(self, ray: Any, hub: Any) -> None:
        self.work = _HubWork(ray, hub)
        self.budget = _HubBudget(ray, hub)
        self.stop = threading.Event()
        self.go = threading.Event()
        self.start_at = _Value()


# ---------------------------------------------------------------------------------------
# The coordinator
# ---------------------------------------------------------------------------------------


class RayEngineLoad(PooledEngineLoad):
    """PooledEngineLoad with its workers as Ray actors over the cluster at `address`."""

    def __init__(self, *args: Any, address: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.address = address
        self.offsets: list[ClockOffset] = []

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

    def _coordinate(self) -> Any:
        ray = connect(self.address)
        try:
            return self._coordinate_on(ray)
        except ray.exceptions.RayError as error:  # the head or the hub gone: the run cannot go on
            raise ShootoutError(
                f"Ray: the cluster at {self.address[:80]} failed during the run: "
                f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
            ) from None

    def _coordinate_on(self, ray: Any) -> Any:
        load = self.load
        closed = load.mode == "concurrency"
        backlog = 2 * (load.concurrency or 64) + 64 if closed else 100_000
        # The hub on the head node: the one node a cluster cannot lose and go on.
        hub = (
            ray.remote(Hub)
            .options(num_cpus=0, max_concurrency=HUB_CONCURRENCY, resources={HEAD_RESOURCE: 0.001})
            .remote(backlog, load.requests, (load.concurrency or 0) + self.workers * TAKE_MOST)
        )
        worker_class = ray.remote(LoadWorker).options(
            num_cpus=1, max_concurrency=2, scheduling_strategy="SPREAD"
        )
        actors = [worker_class.remote() for _ in range(self.workers)]
        channels = _CoordinatorChannels(ray, hub)
        finished = threading.Event()
        feeder = threading.Thread(
            target=self._feed,
            args=(self._feed_closed if closed else self._feed_open, channels, finished),
            daemon=True,
        )
        done: dict[int, dict[str, Any]] = {}
        ready: set[int] = set()
        try:
            try:
                self.offsets = self._measure_offsets(ray, actors)
            except ray.exceptions.GetTimeoutError:
                raise ShootoutError(
                    f"Ray: {self.workers} load-generator workers did not start within "
                    f"{READY_TIMEOUT_S:.0f} s (each needs one CPU of the cluster)."
                ) from None
            origin = time.perf_counter()
            self.outcome.origin = origin
            self.outcome.wall_start = time.time()
            runs = {}
            for setup, clock in zip(self._setups(origin), self.offsets, strict=True):
                shifted = replace(setup, origin=setup.origin + clock.offset_s, coordinator_pid=None)
                runs[actors[setup.worker].run.remote(shifted, hub, clock.offset_s)] = setup.worker
            feeder.start()
            ready_by = time.monotonic() + READY_TIMEOUT_S
            while len(ready) + len(self.failures) < len(actors):
                self._pump(ray, hub, runs, ready, done)
                if self._stopping(ray, hub, channels) or time.monotonic() > ready_by:
                    break
            if not self.failures and not channels.stop.is_set():
                self.measure_start = time.perf_counter() + RAY_START_MARGIN_S
                deadline = self.measure_start + load.duration_s if load.duration_s else 0.0
                channels.start_at.value = self.measure_start
                ray.get(hub.set.remote(go=True, start_at=self.measure_start, deadline=deadline))
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
            if feeder.is_alive() or feeder.ident is not None:
                feeder.join(timeout=5)
            for actor in [*actors, hub]:
                ray.kill(actor)
        if self.failures and not done:
            raise ShootoutError("The load's Ray workers failed: " + "; ".join(self.failures))
        outcome = self._outcome(done)
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

    def _stopping(self, ray: Any, hub: Any, channels: _CoordinatorChannels) -> bool:
        if not channels.stop.is_set() and self.should_stop():
            self.outcome.cancelled = True
            channels.stop.set()
            hub.set.remote(stop=True)
        return channels.stop.is_set()

    def _pump(
        self, ray: Any, hub: Any, runs: dict[Any, int], ready: set[int], done: dict[int, dict[str, Any]]
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
                self.failures.append(f"worker {worker} on {clock.host}: lost ({type(error).__name__})")
                ready.add(worker)

    def _drain(self, ray: Any, hub: Any, ready: set[int], done: dict[int, dict[str, Any]]) -> None:
        for kind, worker, payload in ray.get(hub.drain.remote()):
            if kind == "records":
                payload = pickle.loads(payload[2])  # packed by the worker (_WorkerChannels.put)
            self._handle(kind, worker, payload, ready, done)

    def _fail_lost(self, worker: int, items: list[Any]) -> None:
        clock = self.offsets[worker]
        for turn_index, item in items:
            # Open loop: the item's time counts from the start; records count from the origin.
            scheduled = (
                self.measure_start - self.outcome.origin + item[0] if isinstance(item, tuple) else None
            )
            record = RequestRecord(
                engine=self.engine.name,
                index=turn_index,
                ok=False,
                scheduled_s=scheduled,
                error_class=WORKER_LOST,
                error=f"the load-generator worker on {clock.host} was lost mid-request (its Ray node left)",
                step=self.step,
            )
            self.outcome.records.append(record)
            self.done_count += 1
            self.sink.add(record)
