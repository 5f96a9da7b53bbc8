"""One load spread over the nodes of a Ray cluster (`--ray ADDRESS`), an optional extra
(requirements-ray.txt).

The same worker body as on one host (services/bench/pool/worker.py `worker_process`) runs in Ray
actors spread over the cluster; only the transport differs:
- a hub actor (next to the coordinator where Ray allows) holds what services/bench/pool keeps in
  multiprocessing objects: the work queue the coordinator fills with its one seeded
  schedule, the shared budget, the stop and start flags, and the records coming back.
  Workers take their requests in batches (`RAY_TAKE_MOST`, one take in flight, the next
  asked for ahead) and stream their records back in batches: every hub call costs about a
  millisecond of CPU on each side, so the calls per request are what a worker's cost is.
- the budget: the hub claims each conversation's first turn as it hands the conversation
  out, in the coordinator's order, so a batch of open-loop arrivals (those due within
  the pool's `LOOKAHEAD_S`) costs one round trip, not one per request on the event loop;
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

Modules: `cluster` (joining the cluster, and saying plainly why not), `hub` (the shared
state actor), `channels` (the pool's channel names over the hub, for a worker and for the
coordinator), `actor` (the worker actor), `coordinator` (`RayEngineLoad`, which holds the pool's
`Coordination` for what any coordinator does, and `RayTransport`, this package's `LoadTransport`).
"""

from services.bench.ray_pool.cluster import (
    RayUnavailable,
    check_reachable,
    cluster_nodes,
    connect,
    ray_workers,
)
from services.bench.ray_pool.coordinator import (
    WORKER_LOST,
    ClockOffset,
    RayEngineLoad,
    RayTransport,
)

__all__ = [
    "WORKER_LOST",
    "ClockOffset",
    "RayEngineLoad",
    "RayTransport",
    "RayUnavailable",
    "check_reachable",
    "cluster_nodes",
    "connect",
    "ray_workers",
]
