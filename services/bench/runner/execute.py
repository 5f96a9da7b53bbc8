"""One engine under one load, synchronously (`execute_load`), on whichever transport carries
its placement: this process's loop, worker processes (services/bench/pool/) or a Ray cluster
(services/bench/ray_pool/)."""

from __future__ import annotations

from collections.abc import Callable

from services.bench.arrivals import LoadSpec
from services.bench.load.outcome import EngineOutcome, ListSink, RecordSink, never_stop
from services.bench.load.transport import LoadJob, Placement
from services.bench.runner.transports import transport_for
from services.bench.spec import EngineTarget, RequestSettings
from services.bench.workloads import WorkloadSpec


def execute_load(
    engine: EngineTarget,
    workload: WorkloadSpec,
    load: LoadSpec,
    *,
    salt: str = "",
    timeout_s: float = 600.0,
    sink: RecordSink | None = None,
    should_stop: Callable[[], bool] = never_stop,
    request_headers: Callable[[int], dict[str, str]] | None = None,
    connect_ahead: bool = True,
    workers: int = 1,
    ray_address: str = "",
) -> EngineOutcome:
    """One engine under one load, synchronously, on the client's fast loop (benchmarks, tests);
    with `workers` > 1 spread over that many processes (services/bench/pool/), with a
    `ray_address` over that Ray cluster's nodes (services/bench/ray_pool/); there
    `request_headers` must be picklable (it travels to the workers)."""
    placement = Placement(workers=workers, ray_address=ray_address)
    job = LoadJob(
        engine,
        workload.validate(),
        load.validate(),
        sink=sink or ListSink(),
        should_stop=should_stop,
        settings=RequestSettings(
            salt=salt, timeout_s=timeout_s, connect_ahead=connect_ahead, request_headers=request_headers
        ),
        placement=placement,
    )
    return transport_for(placement).execute(job)
