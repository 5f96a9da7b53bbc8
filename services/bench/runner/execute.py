"""One engine under one load, synchronously (`execute_load`): on this process's loop, over
worker processes (services/bench/pool/) or over a Ray cluster (services/bench/ray_pool/)."""

from __future__ import annotations

from collections.abc import Callable

from services.bench.arrivals import LoadSpec
from services.bench.runner.engine_load import EngineLoad
from services.bench.runner.outcome import EngineOutcome, ListSink, RecordSink, never_stop
from services.bench.runner.pacing import MAX_IN_FLIGHT, quiet_gc
from services.bench.spec import EngineTarget, RequestSettings
from services.bench.workloads import WorkloadSpec
from services.client import make_http_client


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
    from services.client import run_blocking

    settings = RequestSettings(
        salt=salt, timeout_s=timeout_s, connect_ahead=connect_ahead, request_headers=request_headers
    )
    if ray_address:
        from services.bench.ray_pool import RayEngineLoad, ray_workers

        return RayEngineLoad(
            engine,
            workload.validate(),
            load.validate(),
            workers=ray_workers(ray_address, workers),
            sink=sink or ListSink(),
            should_stop=should_stop,
            settings=settings,
            address=ray_address,
        )._coordinate()

    if workers > 1:
        from services.bench.pool import PooledEngineLoad

        pooled = PooledEngineLoad(
            engine,
            workload.validate(),
            load.validate(),
            workers=workers,
            sink=sink or ListSink(),
            should_stop=should_stop,
            settings=settings,
        )
        return pooled._coordinate()

    async def main() -> EngineOutcome:
        with quiet_gc():
            async with make_http_client(MAX_IN_FLIGHT, read_timeout_s=timeout_s) as client:
                return await EngineLoad(
                    client,
                    engine,
                    workload.validate(),
                    load.validate(),
                    sink=sink or ListSink(),
                    should_stop=should_stop,
                    settings=settings,
                ).run()

    return run_blocking(main())
