"""SIGTERM (a CI timeout, `docker stop`) stops `bench`, `parity` and `demo` as Ctrl-C does: the
run is stored "cancelled" with what it measured and the command exits 130 (issue 44, item 10:
they died and left their run "running", holding the server's limit of active benchmarks).

Each command runs as a real subprocess against the scripted server; the signal is sent once
its run has stored a few requests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from db.models import RequestResult, Run
from db.session import session_scope
from services.core.processes import pid_alive
from services.engines import endpoints
from services.local_engines import is_installed
from tests.services.demos.demo_server import DemoServer
from tests.support.scripted_server import ScriptedServer
from tests.support.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_server() -> Iterator[DemoServer]:
    with DemoServer() as server:
        yield server


def _stored_rows() -> tuple[int, str, int] | None:
    """(run id, status, request rows) of the one run in the database, None before it exists."""
    with session_scope() as session:
        run = session.scalars(select(Run)).first()
        if run is None:
            return None
        rows = session.scalar(
            select(func.count()).select_from(RequestResult).where(RequestResult.run_id == run.id)
        )
        return run.id, run.status, int(rows or 0)


def _sigterm_after_rows(args: list[str], rows: int = 2) -> tuple[int, str, str]:
    """Start `cli.py ARGS`, SIGTERM it once its run stored `rows` requests; (exit code, the
    run's status, stderr)."""
    return _sigterm_when(args, lambda: (stored := _stored_rows()) is not None and stored[2] >= rows)


def _sigterm_when(args: list[str], ready: Callable[[], object]) -> tuple[int, str, str]:
    process = subprocess.Popen(
        [sys.executable, "cli.py", *args],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        wait_for(ready, timeout_s=90)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stored = _stored_rows()
    assert stored is not None
    return process.returncode, stored[1], stderr


def test_bench_stopped_by_sigterm_keeps_its_run_cancelled(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    code, status, stderr = _sigterm_after_rows(
        [
            "bench",
            "--url",
            scripted_server.base_url,
            "--kind",
            "vllm",
            "--model",
            scripted_server.model(ttft=5, itl=20, tokens=200),
            "--concurrency",
            "2",
            "--requests",
            "400",
            "--output-len",
            "200",
            "--quiet",
        ]
    )
    assert (code, status) == (130, "cancelled"), stderr
    assert "Traceback" not in stderr


def test_parity_stopped_by_sigterm_keeps_its_run_cancelled(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    for name in ("left", "right"):
        endpoints.add_engine(
            name, scripted_server.base_url, kind="vllm", model=scripted_server.model(ttft=5, itl=10)
        )
    code, status, stderr = _sigterm_after_rows(
        ["parity", "--engine", "left", "--engine", "right", "--count", "60", "--max-tokens", "16"]
    )
    assert (code, status) == (130, "cancelled"), stderr
    assert "Traceback" not in stderr


def test_demo_stopped_by_sigterm_keeps_its_run_cancelled(db_url: str, demo_server: DemoServer) -> None:
    demo_server.register("slow-a", "ttft=50,itl=20")
    code, status, stderr = _sigterm_after_rows(
        ["demo", "batching", "--engines", "slow-a", "--set", "levels=1,2,4,8"]
    )
    assert (code, status) == (130, "cancelled"), stderr
    assert "Traceback" not in stderr


def _running_configuration() -> dict | None:
    with session_scope() as session:
        run = session.scalars(select(Run)).first()
        configs = ((run.summary or {}).get("configs") or []) if run is not None else []
    return next((c for c in configs if c.get("status") == "running" and c.get("pid")), None)


def test_tune_stopped_by_sigterm_keeps_its_run_cancelled_and_stops_its_engine(db_url: str) -> None:
    assert is_installed("llamacpp"), "llama.cpp is not installed: `python cli.py local install`"
    args = ["tune", "--kind", "llamacpp", "--config", "np=1", "--requests", "500"]
    args += ["--input-len", "16", "--output-len", "64"]
    code, status, stderr = _sigterm_when(args, _running_configuration)
    assert (code, status) == (130, "cancelled"), stderr
    with session_scope() as session:
        (config,) = session.scalars(select(Run)).one().summary["configs"]
    assert config["status"] == "cancelled" and not pid_alive(config["pid"])  # its engine stopped
