"""A real two-node Ray cluster on 127.0.0.1 for tests: a head and a second node, each one
CPU and a small object store, on free ports. Each node runs `ray start --block` as our own
child, so stopping it (by PID) stops that node and nothing of anyone else's Ray."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

RAY = str(Path(sys.executable).with_name("ray"))
OBJECT_STORE_BYTES = 80 * 1024 * 1024
START_TIMEOUT_S = 120.0
#: The test cluster's nodes and every client of it (this process, the `cli.py` runs it
#: starts) without token authentication, whatever this machine holds: a `~/.ray/auth_token`
#: left by any local `ray.init()` turns token mode on for whoever finds it unset, and a
#: cluster and a client that disagree fail with "InvalidAuthToken".
AUTH_MODE = {"RAY_AUTH_MODE": "disabled"}


#: A lost node known as gone in about 3 s, not Ray's 15 to 17 (a check every 3 s, 5 missed):
#: a killed raylet refuses the check at once, so only the period and the count matter; the
#: timeout a live but busy node has to answer stays Ray's own.
HEALTH_CHECKS = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class RayCluster:
    address: str
    temp_dir: str
    nodes: list[subprocess.Popen] = field(default_factory=list)

    def start_node(self, *, head: bool = False) -> subprocess.Popen:
        command = [
            RAY,
            "start",
            "--block",
            "--node-ip-address=127.0.0.1",
            "--num-cpus=1",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            "--disable-usage-stats",
        ]
        if head:
            command += [
                "--head",
                f"--port={self.address.rpartition(':')[2]}",
                "--include-dashboard=false",
                f"--temp-dir={self.temp_dir}",
            ]
        else:
            command += [f"--address={self.address}"]
        log = open(Path(self.temp_dir) / f"node-{len(self.nodes)}.log", "wb")  # noqa: SIM115 - the node's lifetime
        node = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **HEALTH_CHECKS},
        )
        self.nodes.append(node)
        return node

    def alive_nodes(self) -> int:
        import ray

        return sum(1 for node in ray.nodes() if node.get("Alive"))

    def kill_node(self, node: subprocess.Popen) -> None:
        """The node lost outright (a host gone): SIGKILL to its whole process group."""
        os.killpg(node.pid, signal.SIGKILL)
        node.wait(timeout=10)

    def stop_node(self, node: subprocess.Popen) -> None:
        """The node's whole process group (its raylet, its workers), ours alone."""
        if node.poll() is None:
            os.killpg(node.pid, signal.SIGTERM)
            try:
                # A head node often outlives SIGTERM (it waited the whole 20 s this had): the
                # cluster holds nothing to keep, so it gets a short grace, then SIGKILL.
                node.wait(timeout=3)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait(timeout=10)
        try:  # what outlived its `ray start` (a raylet's workers)
            os.killpg(node.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _wait_for_port(port: int, node: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if node.poll() is not None:
            raise RuntimeError(
                f"ray start exited ({node.returncode}): {log.read_text(errors='replace')[-2000:]}"
            )
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the Ray head did not listen on {port} within {START_TIMEOUT_S:.0f} s")


@contextmanager
def ray_cluster(nodes: int = 2) -> Iterator[RayCluster]:
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    port = free_port()
    cluster = RayCluster(address=f"127.0.0.1:{port}", temp_dir=temp_dir)
    with mock.patch.dict(os.environ, AUTH_MODE):
        try:
            head = cluster.start_node(head=True)
            _wait_for_port(port, head, Path(temp_dir) / "node-0.log")
            for _ in range(nodes - 1):
                cluster.start_node()
            from services.bench.ray_pool import connect

            connect(cluster.address)
            deadline = time.monotonic() + START_TIMEOUT_S
            while cluster.alive_nodes() < nodes:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {cluster.alive_nodes()} of {nodes} Ray nodes came up")
                time.sleep(0.5)
            yield cluster
        finally:
            import ray

            ray.shutdown()
            for node in reversed(cluster.nodes):
                cluster.stop_node(node)
            shutil.rmtree(temp_dir, ignore_errors=True)
