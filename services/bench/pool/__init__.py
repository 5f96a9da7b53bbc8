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

Modules: `plan` (the worker count and how a load's shares are dealt), `channels` (what the
coordinator shares with its workers: queues, flags, the budget, each worker's setup), `worker`
(a worker's body, the same over Ray: services/bench/ray_pool/), `coordination` (what any
coordinator does: shares, feeding, records, the merged outcome; Ray's holds one too),
`coordinator` (`PooledEngineLoad`, and `ProcessTransport`, this package's `LoadTransport`).
"""

from services.bench.pool.coordination import Coordination
from services.bench.pool.coordinator import PooledEngineLoad, ProcessTransport
from services.bench.pool.plan import MAX_WORKERS, auto_workers, split, usable_cores

__all__ = [
    "MAX_WORKERS",
    "Coordination",
    "PooledEngineLoad",
    "ProcessTransport",
    "auto_workers",
    "split",
    "usable_cores",
]
