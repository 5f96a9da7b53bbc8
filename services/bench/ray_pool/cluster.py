"""Joining a Ray cluster: Ray installed, the address answering, one driver per process."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from services.core.errors import ShootoutError
from services.core.json_types import ForeignJson

CONNECT_PROBE_S = 3.0
#: The checkout the actors import `services` from (the same path on every node).
REPO_ROOT = str(Path(__file__).resolve().parents[3])
_joined = ""


class RayUnavailable(ShootoutError):
    """Ray is not installed, or its cluster cannot be reached."""


def _ray() -> Any:
    try:
        # Ray is optional (requirements-ray.txt): its absence is a RayUnavailable, not an ImportError.
        import ray
    except ImportError:
        raise RayUnavailable("Ray is not installed: pip install -r requirements-ray.txt") from None
    return ray


def _probe(address: str) -> None:
    """ray.init waits a minute or more on an address nobody answers; a TCP connect says so
    in seconds."""
    if address in ("auto", "local") or address.startswith("ray://"):
        target = address.removeprefix("ray://")
        if target in ("auto", "local"):
            return
    else:
        target = address
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"Ray address {address[:80]!r}: expected HOST:PORT (or ray://HOST:PORT).")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_PROBE_S).close()
    except OSError as error:
        raise RayUnavailable(
            f"Ray at {address[:80]} is unreachable: {error.strerror or error}"
        ) from None


def check_reachable(address: str) -> None:
    """Ray installed and the address answering, without joining the cluster (the web server
    checks a form this way; the run's worker process joins)."""
    _ray()
    _probe(address)


def connect(address: str) -> Any:
    """The `ray` module, connected to the cluster at `address` (once per process)."""
    global _joined
    ray = _ray()
    if ray.is_initialized() and _joined == address:
        return ray
    _probe(address)
    if ray.is_initialized():
        ray.shutdown()  # another cluster: a process is a driver of one at a time
    try:
        ray.init(
            address=address,
            log_to_driver=False,
            logging_level="ERROR",
            configure_logging=False,
            runtime_env={"env_vars": {"PYTHONPATH": REPO_ROOT}},
        )
    except Exception as error:  # noqa: BLE001 - Ray raises many kinds; the user needs one line
        raise RayUnavailable(
            f"Ray at {address[:80]} could not be joined: {type(error).__name__}: {error}"
        ) from None
    _joined = address
    return ray


def cluster_nodes(address: str) -> list[ForeignJson]:
    """The live nodes of the cluster, as Ray describes them (`ray.nodes()`)."""
    return [node for node in connect(address).nodes() if node.get("Alive")]


def ray_workers(address: str, workers: int) -> int:
    """The actor count: as asked, or with 1 or auto one per live node of the cluster."""
    return workers if workers > 1 else max(1, len(cluster_nodes(address)))
