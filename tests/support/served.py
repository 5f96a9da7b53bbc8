"""The served app (`streamlit run serve.py`, as run.sh starts it) in a subprocess on a free
port, with the environment a test gives it (passwords, limits)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Served:
    url: str
    port: int
    process: subprocess.Popen
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_served_app(tmp_path: Path, env_extra: dict[str, str]) -> Served:
    port = _free_port()
    env = {
        **os.environ,
        "SHOOTOUT_DATA_DIR": str(tmp_path),
        "SHOOTOUT_NO_AUTOREFRESH": "1",
        "SHOOTOUT_DATABASE_URL": f"sqlite:///{tmp_path / 'shootout.db'}",
        **env_extra,
    }
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "serve.py",
                "--server.headless",
                "true",
                "--server.address",
                "127.0.0.1",
                "--server.port",
                str(port),
                "--browser.gatherUsageStats",
                "false",
                "--server.fileWatcherType",
                "none",
            ],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx2.get(url + "/_stcore/health", timeout=2).text.strip() == "ok":
                return Served(url, port, process, log)
        except httpx2.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"serve.py did not start: {log.read_text()[-2000:]}")
        time.sleep(0.3)


def stop(served: Served) -> None:
    served.process.terminate()
    try:
        served.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        served.process.kill()
