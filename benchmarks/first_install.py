"""The first minutes of a new user (issue 48): a fresh clone on a machine with empty caches,
`./run.sh`, and the times at which the app answers, each backend's install ends, and each local
engine answers healthy.

"Empty" is as empty as this machine allows: the clone has no `.venv` or `.engines`, and HOME is
a new folder, so pip's cache, the llama.cpp wheelhouse (~/.cache/shootout/wheels) and Hugging
Face's cache start empty. The clone gets its own ports (the app's and the engines'), so a
developer's running engines are left alone. At the end it stops what it started (`shootout local
down` in the clone, then run.sh) and removes the clone unless --keep.

    .venv/bin/python -m benchmarks.first_install [--timeout-min 40] [--engines all] [--keep]
        [--pip-cache DIR]

--pip-cache DIR: pip's cache is DIR instead of the empty HOME's (e.g. ~/.cache/pip, warm from
earlier installs): "the same with pip's cache warm". The wheelhouse and Hugging Face's cache
stay empty, so llama.cpp still compiles.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: `local status` is a process of its own (a fraction of a core each time): not too often.
POLL_S = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            response.read(1024)
            return bool(response.status == 200)
    except OSError:
        return False


def status(repo: Path, env: dict[str, str]) -> list[dict[str, object]]:
    shootout = repo / ".venv" / "bin" / "shootout"
    if not shootout.exists():
        return []
    try:
        answer = subprocess.run(
            [str(shootout), "local", "status", "--json"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        found = json.loads(answer.stdout or "[]")
    except (subprocess.TimeoutExpired, json.JSONDecodeError):
        return []
    return found if isinstance(found, list) else []


def environment(
    home: Path, app_port: int, engine_base: int, engines: str, pip_cache: Path | None
) -> dict[str, str]:
    """The clone's: an empty HOME (pip's cache, the wheelhouse, Hugging Face's), its own ports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHOOTOUT_", "PIP_CACHE", "HF_"))}
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        SHOOTOUT_PORT=str(app_port),
        SHOOTOUT_LOCAL_PORT_BASE=str(engine_base),
        SHOOTOUT_LOCAL_ENGINES=engines,
    )
    if pip_cache is not None:
        env["PIP_CACHE_DIR"] = str(pip_cache.expanduser().resolve())
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout-min", type=float, default=40.0)
    parser.add_argument("--engines", default="all", help="SHOOTOUT_LOCAL_ENGINES for the clone")
    parser.add_argument("--keep", action="store_true", help="keep the clone and its engines folder")
    parser.add_argument("--pip-cache", type=Path, help="pip's cache (warm) instead of an empty one")
    args = parser.parse_args()

    top = Path(tempfile.mkdtemp(prefix="shootout-first-"))
    repo, home = top / "repo", top / "home"
    home.mkdir()
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(repo)], check=True)
    (top / "shared").symlink_to(ROOT.parent / "shared")
    app_port, engine_base = free_port(), 18181
    env = environment(home, app_port, engine_base, args.engines, args.pip_cache)
    log = (top / "run.sh.log").open("w")
    start = time.monotonic()
    run_sh = subprocess.Popen(
        ["./run.sh"], cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    print(
        f"clone {repo}, app port {app_port}, engines from port {engine_base}; run.sh's lines: {log.name}"
    )
    app_at: float | None = None
    healthy: dict[str, float] = {}
    installed: dict[str, float] = {}
    ids: set[str] = set()
    deadline = start + args.timeout_min * 60
    try:
        while time.monotonic() < deadline:
            now = time.monotonic() - start
            if app_at is None and answers(f"http://127.0.0.1:{app_port}/_stcore/health"):
                app_at = now
                print(f"{now:7.0f} s  the app answers")
            for engine in status(repo, env):
                name, state = str(engine.get("id")), engine.get("status")
                ids.add(name)
                kind = str(engine.get("kind"))
                if engine.get("installed") and kind not in installed:
                    installed[kind] = now
                    print(f"{now:7.0f} s  {kind} installed")
                if state == "running" and name not in healthy:
                    healthy[name] = now
                    print(f"{now:7.0f} s  {name} healthy")
                if state == "failed" and name not in healthy:
                    print(f"{now:7.0f} s  {name} FAILED: {engine.get('message')}")
                    healthy[name] = float("nan")
            if ids and set(healthy) >= ids and app_at is not None:
                break
            if run_sh.poll() is not None:
                print(f"run.sh ended (exit {run_sh.returncode}); see {log.name}")
                break
            time.sleep(POLL_S)
    finally:
        shootout = repo / ".venv" / "bin" / "shootout"
        if shootout.exists():
            subprocess.run(
                [str(shootout), "local", "down"], cwd=repo, env=env, capture_output=True, timeout=180
            )
        if run_sh.poll() is None:
            os.killpg(run_sh.pid, signal.SIGTERM)
            run_sh.wait(timeout=30)
        log.close()
    done = [t for t in healthy.values() if not math.isnan(t)]
    print()
    print(f"app answered: {app_at:.0f} s" if app_at is not None else "app never answered")
    for kind, at in sorted(installed.items(), key=lambda item: item[1]):
        print(f"  {kind:10s} installed at {at:6.0f} s")
    for name, at in sorted(healthy.items(), key=lambda item: item[1]):
        print(f"  {name:16s} healthy at {at:6.0f} s")
    if ids and len(done) == len(ids):
        print(f"all {len(ids)} engines healthy at {max(done):.0f} s ({max(done) / 60:.1f} min)")
    else:
        print(f"{len(done)} of {len(ids)} engines healthy when it stopped")
    install_logs = repo / ".engines" / "run"
    print(f"install logs: {install_logs}")
    if not args.keep:
        shutil.rmtree(top, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
