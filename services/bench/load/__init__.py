"""One engine under one load on one event loop (`EngineLoad`), and the one interface the
transports that carry such a load implement (`LoadTransport`).

This package sits below the transports and the runner: the worker processes
(services/bench/pool/) and the Ray actors (services/bench/ray_pool/) run an `EngineLoad`
each, and the runner (services/bench/runner/) picks a transport from its registry. Nothing
here imports either of them (tests/services/bench/test_transport_imports.py says so).

Parts: `outcome.py` (sinks, an engine's outcome, a worker's plan), `pacing.py` (budget,
arrival schedule, GC, connections ahead), `engine_load.py` (one engine under one load),
`transport.py` (`LoadTransport`, `LoadJob`, `Placement`), `local.py` (the in-process transport).
"""

from services.bench.load.engine_load import EngineLoad
from services.bench.load.local import InProcessTransport
from services.bench.load.outcome import EngineOutcome, ListSink, RecordSink, WorkerPlan, never_stop
from services.bench.load.transport import LoadJob, LoadRun, LoadTransport, Placement

__all__ = [
    "EngineLoad",
    "EngineOutcome",
    "InProcessTransport",
    "ListSink",
    "LoadJob",
    "LoadRun",
    "LoadTransport",
    "Placement",
    "RecordSink",
    "WorkerPlan",
    "never_stop",
]
