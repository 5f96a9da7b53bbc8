"""The benchmark job service: runs stored in the database, executed by a worker that
outlives the page.

Life of a run: `start_benchmark(spec)` stores a Run (kind "benchmark", status "pending",
config = the full spec) and starts a worker process (`python -m services.runstate.worker benchmark ID`,
its own session, so it goes on when the page closes or the app restarts). The worker sets
"running", executes the benchmark on its own event loop (uvloop) and hands every finished
request to a writer thread, which inserts RequestResult rows in batches about twice a
second and refreshes the run's heartbeat, progress and live figures. Any number of viewers
poll the same rows. At the end the worker writes `Run.summary` and the final status:
finished, finished_with_errors (some requests failed), cancelled, or failed (the run itself
could not go on; `Run.error` says why).

Cancelling (`cancel_run`) sets the status to "cancelled" at once; the worker sees it within
half a second, cancels the requests in flight (recorded as failed, class "cancelled") and
writes the summary of what it has. A worker that dies leaves a stale heartbeat:
`mark_interrupted_runs()` (called at app start) marks such runs "interrupted" and builds
their summary from the rows already stored. The CLI runs the same `execute_run` in its own
process, in the foreground.

The parts: creating and starting runs (`starting`), the worker-side writer (`writer`),
executing a run and marking interrupted ones (`executing`), the summary (`summarize`), the
engine metrics recorded beside a run (`engine_metrics`), reading runs back (`reading`).
Callers import from here (`from services.bench import jobs`).
"""

from services.bench.jobs.engine_metrics import (
    default_metrics_url,
    engine_metrics_for,
    start_engine_metrics,
    summarize_engine_samples,
)
from services.bench.jobs.executing import (
    execute_run,
    load_spec,
    mark_interrupted_runs,
    partial_summary,
)
from services.bench.jobs.reading import (
    BenchRunItem,
    BenchRunView,
    get_run,
    list_runs,
    load_records,
    stored_records,
)
from services.bench.jobs.starting import (
    KIND,
    cancel_run,
    create_run,
    engine_target,
    launch_worker,
    start_benchmark,
    store_reported_settings,
    update_run,
)
from services.bench.jobs.summarize import build_summary, generator_verdict
from services.bench.jobs.writer import FLUSH_INTERVAL_S, DatabaseSink, record_from_row, request_row
from services.runstate.lifecycle import ACTIVE_STATUSES

__all__ = [
    "ACTIVE_STATUSES",
    "FLUSH_INTERVAL_S",
    "KIND",
    "BenchRunItem",
    "BenchRunView",
    "DatabaseSink",
    "build_summary",
    "cancel_run",
    "create_run",
    "default_metrics_url",
    "engine_metrics_for",
    "engine_target",
    "execute_run",
    "generator_verdict",
    "get_run",
    "launch_worker",
    "list_runs",
    "load_records",
    "load_spec",
    "mark_interrupted_runs",
    "partial_summary",
    "record_from_row",
    "request_row",
    "start_benchmark",
    "start_engine_metrics",
    "store_reported_settings",
    "stored_records",
    "summarize_engine_samples",
    "update_run",
]
