"""The in-process transport: the load on this process's event loop (`EngineLoad` itself)."""

from __future__ import annotations

from services.bench.load.engine_load import EngineLoad
from services.bench.load.outcome import EngineOutcome
from services.bench.load.pacing import MAX_IN_FLIGHT, quiet_gc
from services.bench.load.transport import LoadJob, Placement
from services.client import StreamClient, make_http_client, run_blocking


def engine_load(job: LoadJob, client: StreamClient) -> EngineLoad:
    return EngineLoad(
        client,
        job.engine,
        job.workload,
        job.load,
        sink=job.sink,
        should_stop=job.should_stop,
        settings=job.settings,
    )


class InProcessTransport:
    """One process: the default, and what every other placement is not."""

    name = "process"

    def carries(self, placement: Placement) -> bool:
        return True

    def check(self, placement: Placement) -> None:
        return None

    def start(self, job: LoadJob, client: StreamClient) -> EngineLoad:
        return engine_load(job, client)

    def execute(self, job: LoadJob) -> EngineOutcome:
        async def main() -> EngineOutcome:
            with quiet_gc():
                async with make_http_client(
                    MAX_IN_FLIGHT, read_timeout_s=job.settings.timeout_s
                ) as client:
                    return await engine_load(job, client).run()

        return run_blocking(main())
