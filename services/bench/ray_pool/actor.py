"""The load-generator worker actor: services/bench/pool's worker body over the hub."""

from __future__ import annotations

import socket
import time
from typing import Any

from services.bench.pool.channels import WorkerSetup
from services.bench.pool.worker import worker_process
from services.bench.ray_pool.channels import WorkerChannels


class LoadWorker:
    """One load-generator worker on some node: services/bench/pool's worker body over the hub."""

    def clock(self) -> tuple[float, str, str]:
        # Ray is optional (requirements-ray.txt): loaded where a Ray pool runs, never on import.
        import ray

        return time.perf_counter(), socket.gethostname(), ray.get_runtime_context().get_node_id()

    def run(self, setup: WorkerSetup, hub: Any, offset_s: float) -> bool:
        channels = WorkerChannels(hub, setup.worker, offset_s, limited=setup.load.requests is not None)
        try:
            worker_process(setup, channels)  # type: ignore[arg-type]  # duck-typed: the pool's channel methods
        except SystemExit:
            return False
        finally:
            channels.join_thread()  # a failed worker's last records and its reason, too
            channels.close()
        return True
