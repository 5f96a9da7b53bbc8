"""How many workers a load gets and how its shares are dealt, and the pool's timings."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

from services.bench.arrivals import LoadSpec
from services.bench.blocks import GeneratorBlock
from services.bench.selfcheck import CLIENT_BOUND, CPU_SHARE_LIMIT, state
from services.bench.workloads import Conversation, PromptText, WorkloadSpec, iter_conversations
from services.core.processes import usable_cores

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
#: Over Ray (services/bench/ray_pool/): each take is a hub round trip, so larger.
RAY_TAKE_MOST = 128
RECORD_FLUSH_S = 0.1
POLL_S = 0.2
#: How long workers may take to start, connect ahead and warm up before the run fails.
READY_TIMEOUT_S = 120.0
MAX_WORKERS = 64
#: --workers auto: one worker per this many streams, as a first guess (then more when a
#: step was client-bound, see `auto_workers`).
STREAMS_PER_WORKER = 512


def auto_workers(
    load: LoadSpec, previous: GeneratorBlock | None = None, current: int | None = None
) -> int:
    """The worker count `--workers auto` uses for a load: a first guess from the streams
    it will hold, then, after a step whose generator was client-bound (the self-check's
    signals), as many more as the busiest worker's CPU share asks for, up to the cores
    (one left for the coordinator and the writer where there are several). A step that kept
    up, or could not be checked, keeps the count: nothing says more would help."""
    cores = usable_cores()
    ceiling = max(1, cores - 1) if cores > 2 else cores
    streams = load.concurrency or max(1, math.ceil((load.rate or 1.0) * 2))
    guess = max(1, min(ceiling, math.ceil(streams / STREAMS_PER_WORKER)))
    if previous is None or current is None:
        return guess
    if state(previous) != CLIENT_BOUND:
        return max(guess, current)
    busiest = max(previous.get("cpu_share") or [0.0])
    wanted = math.ceil(current * max(busiest, CPU_SHARE_LIMIT) / (0.6 * 1.0)) if busiest else current * 2
    return max(guess, min(ceiling, max(current + 1, wanted)))


def split(total: int, parts: int) -> list[int]:
    """`total` dealt into `parts` shares that sum to it (the first ones one larger)."""
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


def conversations_ahead(load: LoadSpec) -> int:
    """How many closed-loop conversations the coordinator keeps handed out ahead of the
    slots: about twice their number (a worker never waits for the feeder)."""
    return 2 * (load.concurrency or 64) + 64


def closed_loop_reserve(load: LoadSpec, workers: int, take_most: int = TAKE_MOST) -> int:
    """With no more than this many requests left, a closed loop's conversations are handed
    out only as many as a worker has slots waiting: a claimed conversation held for a busy
    slot waits out a whole stream while another worker's slots stand idle. Farther from the
    end they go in lists, claimed a list at a time (a take per conversation costs a worker
    more CPU than the request itself); `take_most`, a worker's largest take, is what it may
    hold claimed when the end nears."""
    return (load.concurrency or 0) + workers * take_most


def take_batch(slots: int, take_most: int, through_hub: bool) -> int:
    """A worker's largest closed-loop take for its `slots`. From this host's queue a quarter
    of them (a take is a queue read). Through Ray's hub twice them: a take is a round trip
    of milliseconds of CPU on each side, the ones held go to the next slots to free, and
    near the budget's end the hub hands only the slots waiting. Taking all the slots (64
    for 64), a 1-token request cost 219 µs of CPU in all on a 2-core VM; twice them, 140
    (2 actors, 128 streams, medians of 5 rounds in shuffled order)."""
    return max(1, min(take_most, slots * 2 if through_hub else slots // 4))


@dataclass(frozen=True)
class ClosedLoopConversations:
    """What a closed loop sends, in order: the workload's seeded sequence, no more
    conversations than the budget's requests (each sent one takes at least one). Drawn by
    the process pool's coordinator, or by Ray's hub itself as workers take them (its
    coordinator then hands nothing over: a hub call costs about a millisecond of CPU on
    each side, once per list of conversations)."""

    workload: WorkloadSpec
    salt: str
    text: PromptText
    requests: int | None

    def draw(self) -> Iterator[Conversation]:
        conversations = iter_conversations(self.workload, salt=self.salt, text=self.text)
        if self.requests is None:
            return conversations
        return itertools.islice(conversations, self.requests)
