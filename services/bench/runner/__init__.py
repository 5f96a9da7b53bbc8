"""The load generator: drives one engine with a workload under a load shape, and a whole
benchmark (several engines, sweep steps, the SLO search) on top of it.

Everything here runs inside one event loop (the benchmark worker's, or the CLI's); nothing
touches the database: finished requests go to a `RecordSink` (the job service writes them in
batches from another thread) and the stop flag is a plain callable polled a few times a
second. Accounting rule: every request that was handed to the HTTP layer produces exactly
one record (completed, failed, or cancelled = failed with class "cancelled"), so
completed + failed = sent holds for every engine and step, whatever happens.

One engine's load on one event loop (`EngineLoad`) and the transport interface live in
services/bench/load/, below the transports (services/bench/pool/, services/bench/ray_pool/)
and this package, which sits above them all. Parts here: `preparation.py` (model discovery,
prompt calibration), `transports.py` (the registry of load transports, by name),
`benchmark.py` (engines x steps, the SLO search), `execute.py` (one load, synchronously, on
the transport its placement asks for). Every name, the load's included, is importable from
here.
"""

from services.bench.load.engine_load import (
    CONNECT_ERRORS,
    CONNECT_FAILURE_BACKOFF_S,
    MAX_ERROR_TEXT,
    STOP_POLL_S,
    EngineLoad,
)
from services.bench.load.outcome import EngineOutcome, ListSink, RecordSink, WorkerPlan
from services.bench.load.pacing import MAX_IN_FLIGHT, connect_ahead, planned_arrivals, quiet_gc
from services.bench.runner.benchmark import (
    Benchmark,
    BenchOutcome,
    EngineMetricsReader,
    StepResult,
)
from services.bench.runner.execute import execute_load
from services.bench.runner.preparation import calibrate_prompt_text, discover_model

# Re-exported because callers (benchmarks/bench_client_cpu.py) import it from here; it lives in
# services/bench/spec.py.
from services.bench.spec import EngineTarget

__all__ = [
    "CONNECT_ERRORS",
    "CONNECT_FAILURE_BACKOFF_S",
    "MAX_ERROR_TEXT",
    "MAX_IN_FLIGHT",
    "STOP_POLL_S",
    "BenchOutcome",
    "Benchmark",
    "EngineLoad",
    "EngineMetricsReader",
    "EngineOutcome",
    "EngineTarget",
    "ListSink",
    "RecordSink",
    "StepResult",
    "WorkerPlan",
    "calibrate_prompt_text",
    "connect_ahead",
    "discover_model",
    "execute_load",
    "planned_arrivals",
    "quiet_gc",
]
