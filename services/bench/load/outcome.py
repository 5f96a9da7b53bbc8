"""What a load produces and how its parts are handed over: the sink finished requests go
to, one engine's outcome under one load, and one worker process's plan of a pooled load."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from services.bench.blocks import GeneratorBlock
from services.bench.selfcheck import WorkerCheck
from services.bench.stats import RequestRecord
from services.bench.workloads import Conversation


class RecordSink(Protocol):
    def add(self, record: RequestRecord) -> None: ...


class ListSink:
    """Keeps records in memory (tests, the CLI without a database)."""

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []

    def add(self, record: RequestRecord) -> None:
        self.records.append(record)


def never_stop() -> bool:
    return False


@dataclass
class EngineOutcome:
    """What one engine did under one load (one step of a sweep, or the whole run)."""

    engine: str
    records: list[RequestRecord] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    cancelled: bool = False
    wall_start: float = 0.0
    wall_end: float = 0.0
    connections_ahead: int = 0
    max_streams: int = 0
    model: str | None = None
    #: perf_counter of the measured phase's start (record times are relative to it).
    origin: float = 0.0
    #: The generator's self-check of each worker (raw samples) and their merged report.
    checks: list[WorkerCheck] = field(default_factory=list)
    generator: GeneratorBlock = field(default_factory=GeneratorBlock)

    @property
    def measured(self) -> list[RequestRecord]:
        return [r for r in self.records if not r.warmup]


@dataclass(frozen=True)
class WorkerEnd:
    """What one worker process of a pooled load reports at its end (its "done" message): its
    self-check and its share of the load's counts, merged by the coordinator into one outcome."""

    check: WorkerCheck
    max_streams: int
    connections_ahead: int
    unsupported: list[str]
    cancelled: bool


@dataclass
class WorkerPlan:
    """One worker process's part of a load the coordinator drew (services/bench/pool/):
    the shared clock origin, its share of connections, warm-ups and concurrency, the shared
    request budget, and where its requests come from."""

    worker: int
    origin: float
    #: Closed loop: this worker's slots (their start offsets); open loop: its share of the cap.
    start_offsets: list[float]
    concurrency_cap: int | None
    budget: Any
    #: After the warm-up: waits for the coordinator's common start, returns it (perf_counter).
    ready: Callable[[], Awaitable[float]]
    #: The next conversation the coordinator drew; None once the budget is spent (only
    #: where the transport claims first turns, below).
    next_conversation: Callable[[], Awaitable[Conversation | None]]
    #: Open loop: (seconds after the start, conversation) in order, as the coordinator drew them.
    schedule: Callable[[], AsyncIterator[tuple[float, Conversation]]]
    #: The transport claims each conversation's first turn from the budget as it hands the
    #: conversation out, in the coordinator's order (Ray: a claim is a network round trip,
    #: so one per batch instead of one per request on the event loop).
    claims_first_turns: bool = False
    #: A later turn's claim, awaited so that a round trip does not stall the event loop;
    #: None: `budget.claim()`.
    claim_turn: Callable[[], Awaitable[bool]] | None = None
