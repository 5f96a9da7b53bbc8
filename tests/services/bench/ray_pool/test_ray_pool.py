"""Load generation over a real two-node Ray cluster on 127.0.0.1: both nodes send, the
records merge exactly as with one process, clock offsets are measured and reported, an
unreachable cluster is one clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.bench.arrivals import LoadSpec
from services.bench.ray_pool import RayUnavailable, connect
from services.bench.runner import ListSink, execute_load
from services.bench.stats import summarize_engine
from services.bench.workloads import WorkloadSpec
from tests.support.ray_cluster import RayCluster, free_port, ray_cluster
from tests.support.scripted_server import ScriptedServer, scripted_engine
from tests.support.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[4]


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "cli.py", "bench", *args],
        check=False,  # the tests read the exit status themselves
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env=dict(os.environ),
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    with ray_cluster(nodes=2) as running:
        yield running


def test_a_closed_loop_across_two_nodes_merges_exactly(
    cluster: RayCluster, scripted_server: ScriptedServer
) -> None:
    sink = ListSink()
    outcome = execute_load(
        scripted_engine(scripted_server),
        WorkloadSpec(input_len=8, output_len=16),
        LoadSpec(concurrency=4, requests=40, warmup_requests=2),
        workers=2,
        sink=sink,
        ray_address=cluster.address,
    )
    summary = summarize_engine(outcome.records, fixed_output=True)
    assert (summary["sent"], summary["completed"], summary["failed"], summary["warmup"]) == (
        40,
        40,
        0,
        2,
    )
    assert sorted(r.index for r in outcome.measured) == list(range(40))
    assert len(sink.records) == len(outcome.records) == 42
    hosts = outcome.generator["hosts"]
    # One actor per node (each node has one CPU, each worker takes one), and both sent.
    assert len({host["node"] for host in hosts}) == 2
    assert all(host["requests"] > 0 for host in hosts) and sum(h["requests"] for h in hosts) == 40
    # Both nodes share this machine's monotonic clock: the measured offsets are within their RTT/2.
    assert all(abs(host["clock_offset_s"]) <= host["rtt_s"] / 2 + 0.002 for host in hosts)
    assert outcome.generator["workers"] == 2 and outcome.generator["ray"] == cluster.address


def test_an_open_loop_across_two_nodes_keeps_the_schedule(
    cluster: RayCluster, scripted_server: ScriptedServer
) -> None:
    work, load = (
        WorkloadSpec(input_len=8, output_len=8),
        LoadSpec(mode="rate", rate=40.0, requests=30, seed=3),
    )
    alone = execute_load(scripted_engine(scripted_server, tokens=8), work, load, salt="same")
    spread = execute_load(
        scripted_engine(scripted_server, tokens=8),
        work,
        load,
        salt="same",
        workers=2,
        ray_address=cluster.address,
    )
    assert [r.index for r in spread.measured if r.ok] and len(spread.measured) == 30
    planned = sorted(
        round(r.scheduled_s - min(x.scheduled_s for x in alone.measured), 6) for r in alone.measured
    )
    got = sorted(
        round(r.scheduled_s - min(x.scheduled_s for x in spread.measured), 6) for r in spread.measured
    )
    assert planned == got
    assert all(host["requests"] > 0 for host in spread.generator["hosts"])


def test_an_unreachable_cluster_is_one_clear_error() -> None:
    with pytest.raises(RayUnavailable, match=r"unreachable"):
        connect(f"127.0.0.1:{free_port()}")
    with pytest.raises(RayUnavailable, match=r"HOST:PORT"):
        connect("no-port-here")


def test_cli_bench_over_ray_stores_the_run_with_its_hosts(
    db_url: str, cluster: RayCluster, scripted_server: ScriptedServer, tmp_path
) -> None:
    out = tmp_path / "out.json"
    result = bench(
        "--url",
        scripted_server.base_url,
        "--model",
        scripted_server.model(ttft=5, itl=1, tokens=8),
        "--concurrency",
        "2",
        "--requests",
        "10",
        "--input-len",
        "8",
        "--output-len",
        "8",
        "--timeout",
        "30",
        "--ray",
        cluster.address,
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    (block,) = json.loads(out.read_text())["engines"].values()
    assert (block["completed"], block["failed"]) == (10, 0)
    hosts = block["generator"]["hosts"]
    assert len(hosts) == 2 and sum(host["requests"] for host in hosts) == 10
    assert "offset" in result.stdout + result.stderr  # the self-check line names the hosts


def test_cli_bench_with_an_unreachable_ray_is_one_line_and_exit_1(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    result = bench(
        "--url",
        scripted_server.base_url,
        "--model",
        scripted_server.model(tokens=8),
        "--concurrency",
        "1",
        "--requests",
        "1",
        "--ray",
        f"127.0.0.1:{free_port()}",
    )
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "unreachable" in result.stderr, result.stderr


def test_a_node_lost_mid_run_fails_its_requests_and_the_others_go_on(
    cluster: RayCluster, scripted_server: ScriptedServer
) -> None:
    extra = cluster.start_node()
    wait_for(lambda: cluster.alive_nodes() == 3, timeout_s=120)
    extra_seen = threading.Event()
    lost = threading.Thread(
        target=lambda: (extra_seen.wait(60), time.sleep(1.0), cluster.kill_node(extra)), daemon=True
    )
    lost.start()

    class Sink(ListSink):
        def add(self, record) -> None:
            super().add(record)
            if len(self.records) >= 3:
                extra_seen.set()

    # Three workers over three one-CPU nodes: one on the node that goes.
    outcome = execute_load(
        scripted_engine(scripted_server, ttft=5, itl=20, tokens=60),
        WorkloadSpec(input_len=8, output_len=60),
        LoadSpec(concurrency=3, requests=15),
        workers=3,
        sink=Sink(),
        ray_address=cluster.address,
    )
    lost.join(timeout=60)
    # Leave the cluster as the other tests expect it: two nodes, the lost one known as gone.
    wait_for(lambda: cluster.alive_nodes() == 2, timeout_s=120)
    summary = summarize_engine(outcome.records, fixed_output=True)
    classes = summary["errors_by_class"]
    assert classes.get("worker_lost", 0) >= 1, summary
    assert set(classes) == {"worker_lost"}, classes
    assert summary["completed"] >= 15 - 3 - classes["worker_lost"] and summary["completed"] > 0
    # Each of the budget's requests once: completed or lost, never both (a report the lost
    # worker sent just before its node went used to land after its loss: 16 of 15).
    assert summary["sent"] == 15
    assert sorted(record.index for record in outcome.records) == list(range(15))
    (failure,) = outcome.generator["worker_failures"]
    assert "lost" in failure


def test_as_many_streams_as_requests_are_all_in_flight_at_once_over_ray(
    cluster: RayCluster, scripted_server: ScriptedServer
) -> None:
    # Near the budget's end the hub hands a worker only the slots it has waiting, so no
    # claimed conversation waits for a busy slot while the other node's slots stand idle.
    wait_for(lambda: cluster.alive_nodes() == 2, timeout_s=120)
    outcome = execute_load(
        scripted_engine(scripted_server, ttft=2500, itl=1, tokens=2),
        WorkloadSpec(input_len=8, output_len=2),
        LoadSpec(concurrency=200, requests=200),
        workers=2,
        ray_address=cluster.address,
    )
    summary = summarize_engine(outcome.records, fixed_output=True)
    assert (summary["sent"], summary["completed"]) == (200, 200)
    assert summary["concurrency_max"] == 200


def test_later_turns_claim_by_an_awaited_round_trip_and_the_budget_stays_exact(
    cluster: RayCluster, scripted_server: ScriptedServer
) -> None:
    # A node killed by an earlier test stays "alive" to Ray until its health checks fail; an
    # actor placed on it meanwhile dies (ActorDiedError). Start once the cluster knows.
    wait_for(lambda: cluster.alive_nodes() == 2, timeout_s=120)
    # Three-turn conversations over 11 requests: the last conversation stops after two turns,
    # its third claim refused by the hub while the loop went on.
    outcome = execute_load(
        scripted_engine(scripted_server, ttft=2, itl=1, tokens=4),
        WorkloadSpec(kind="multi_turn", turns=3, input_len=8, output_len=4),
        LoadSpec(concurrency=4, requests=11),
        workers=2,
        ray_address=cluster.address,
    )
    summary = summarize_engine(outcome.records, fixed_output=True)
    assert (summary["sent"], summary["completed"], summary["failed"]) == (11, 11, 0)
