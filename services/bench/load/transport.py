"""The one interface every load transport implements (one process, worker processes, Ray),
after guidellm's `Environment`: a name, whether it carries a placement and can run it here,
and one engine's load run on it. The runner looks transports up in its registry
(services/bench/runner/transports.py) and knows no transport by kind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from services.bench.arrivals import LoadSpec
from services.bench.load.outcome import EngineOutcome, RecordSink, never_stop
from services.bench.spec import EngineTarget, RequestSettings
from services.bench.workloads import WorkloadSpec
from services.client import StreamClient


@dataclass(frozen=True)
class Placement:
    """Where a load runs: `workers` processes of this host (1: this process), or the nodes of
    the Ray cluster at `ray_address` (`workers` actors; 1: one per live node)."""

    workers: int = 1
    ray_address: str = ""


@dataclass(frozen=True)
class LoadJob:
    """One engine under one load, the same whichever transport carries it."""

    engine: EngineTarget
    workload: WorkloadSpec
    load: LoadSpec
    sink: RecordSink
    should_stop: Callable[[], bool] = never_stop
    settings: RequestSettings = field(default_factory=RequestSettings)
    placement: Placement = field(default_factory=Placement)


class LoadRun(Protocol):
    """A load started on a transport: its outcome once run, and its progress meanwhile (the
    Benchmark's progress bar reads `done_count` and `measure_start`)."""

    load: LoadSpec

    @property
    def done_count(self) -> int: ...

    @property
    def measure_start(self) -> float: ...

    async def run(self) -> EngineOutcome: ...


class LoadTransport(Protocol):
    """What carries one engine's load."""

    #: The registry's key (services/bench/runner/transports.py).
    name: str

    def carries(self, placement: Placement) -> bool:
        """Whether this transport is the one for `placement` (the registry asks in order)."""
        ...

    def check(self, placement: Placement) -> None:
        """Raise a ShootoutError saying plainly why `placement` cannot run here; else nothing."""
        ...

    def start(self, job: LoadJob, client: StreamClient) -> LoadRun:
        """`job` ready to run on the caller's event loop; `client` is the caller's, for a
        transport that sends from this process."""
        ...

    def execute(self, job: LoadJob) -> EngineOutcome:
        """`job` run to its end synchronously, from code outside an event loop."""
        ...
