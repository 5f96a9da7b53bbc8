"""Issue 13, from the command line: against a server that streams forever, never finishes
a body, trickles, or sends 1 GiB, `cli.py engines add`, `cli.py scrape` and
`cli.py bench --url ... --timeout 1` end in bounded time with one clear line and a
non-zero exit (they hung for good before). A deadline of 1 s is still twice the trickle's
gap between bytes: a call bounded only per read would never end."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.commands.test_cli import cli
from tests.support.hostile_server import HostileServer

MODES = ("endless", "stall", "trickle", "huge")


@pytest.fixture(scope="module")
def hostile() -> Iterator[dict[str, str]]:
    servers = [HostileServer(mode).__enter__() for mode in MODES]
    yield {server.mode: server.url for server in servers}
    for server in servers:
        server.__exit__()


def _check(result, started: float, limit_s: float) -> None:  # type: ignore[no-untyped-def]
    elapsed = time.monotonic() - started
    assert elapsed < limit_s, (elapsed, result.stderr[-500:])
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr[-2000:]


@pytest.mark.parametrize("mode", MODES)
def test_engines_add_ends(hostile: dict[str, str], db_url: str, mode: str) -> None:
    started = time.monotonic()
    result = cli("engines", "add", "hostile", hostile[mode])
    _check(result, started, 5 + 8)  # the probe's 5 s deadline, plus the interpreter's start


@pytest.mark.parametrize("mode", MODES)
def test_scrape_ends(hostile: dict[str, str], db_url: str, mode: str) -> None:
    started = time.monotonic()
    result = cli(
        "scrape", hostile[mode] + "/metrics", "--kind", "vllm", "--timeout", "1", "--interval", "0"
    )
    _check(result, started, 1 + 8)


@pytest.mark.parametrize("mode", MODES)
def test_bench_url_with_a_timeout_ends(hostile: dict[str, str], db_url: str, mode: str) -> None:
    started = time.monotonic()
    result = cli(
        "bench",
        "--url",
        hostile[mode],
        "--kind",
        "vllm",
        "--model",
        "m",
        "--requests",
        "2",
        "--concurrency",
        "2",
        "--timeout",
        "1",
        "--output-len",
        "8",
        "--input-len",
        "8",
    )
    elapsed = time.monotonic() - started
    # Each phase is bounded by --timeout (tokenizing, warm-up, requests, the engine's account after
    # the run): about 7 of them and the interpreter's start, 16 s at --timeout 2 on a trickle here.
    assert elapsed < 1 * 7 + 12, (elapsed, result.stderr[-500:])
    assert "Traceback" not in result.stderr
    # Every request failed with a class of its own; the run itself is reported, not hung.
    assert result.returncode != 0 or "failed" in result.stdout.lower(), (
        result.stdout[-1500:],
        result.stderr[-1500:],
    )
