"""What paces the event loop of a load: the request budget and deadline, the open loop's
arrival schedule, the client pool's cap, connections opened ahead, and the garbage
collector kept quiet during a run."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager

from services.bench.arrivals import LoadSpec, arrival_offsets
from services.bench.workloads import Conversation
from services.client import StreamClient, chat_url

#: The client pool's own cap: the load shape (concurrency, rate cap) is what limits requests.
MAX_IN_FLIGHT = 100_000


async def connect_ahead(client: StreamClient, base_url: str, count: int, timeout_s: float = 10.0) -> int:
    """Open up to `count` keep-alive connections before the measured requests, so that they
    do not pay for connection set-up inside their TTFT; returns how many are ready."""
    return await client.open_ahead(chat_url(base_url), count, timeout_s)


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Move everything allocated so far (imports, the app's objects) out of the garbage
    collector's sight for the run: a full collection over them would stall the event loop
    for milliseconds and delay the timestamps of the tokens arriving meanwhile."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class Budget:
    """Requests left and the deadline of the measured phase; claims are atomic in one loop."""

    def __init__(self, requests: int | None, deadline: float | None) -> None:
        self.left = requests
        self.deadline = deadline

    def claim(self) -> bool:
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            return False
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True

    def give_back(self) -> None:
        if self.left is not None:
            self.left += 1


def planned_arrivals(
    load: LoadSpec, conversations: Iterator[Conversation]
) -> Iterator[tuple[float, Conversation]]:
    """The open loop's whole schedule, drawn once: (seconds after the start, conversation)
    in order, from the seeded arrival process or the trace's own times."""
    if load.mode == "trace":
        first_arrival: float | None = None
        for conversation in conversations:
            arrival = conversation.arrival_s or 0.0
            first_arrival = arrival if first_arrival is None else first_arrival
            yield (arrival - first_arrival) / load.trace_speed, conversation
        return
    offsets = arrival_offsets(
        load.rate or 1.0,
        arrival=load.arrival,
        burstiness=load.burstiness,
        seed=load.seed,
        ramp_up_s=load.ramp_up_s,
        ramp_start_rate=load.ramp_start_rate,
    )
    yield from zip(offsets, conversations)
