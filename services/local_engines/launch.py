"""Starting and stopping the local engines: their command lines, the detached processes (their
own session, so they outlive the command or page that started them), and the wait for /health.
A caller that lists the engines it starts passes `register` (services.engines.endpoints'
`register_local`, above this package): it is called once each engine's process is up."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from services.core.errors import EngineError, ShootoutError
from services.core.processes import pid_alive
from services.local_engines.backend import backends, get_backend
from services.local_engines.catalog import (
    LocalEngineSpec,
    LocalEngineStatus,
    all_specs,
    get_spec,
    niced,
    specs,
)
from services.local_engines.installer import install
from services.local_engines.paths import is_installed, state_dir
from services.local_engines.state import (
    children,
    death_reason,
    log_tail,
    mark_failed,
    port_busy,
    read_state,
    state_key,
    state_lock,
    status,
    terminate_group,
    write_state,
)

#: Called with each engine started, before its /health answers (its endpoint row).
Register = Callable[[LocalEngineSpec], object]


def _command(spec: LocalEngineSpec) -> tuple[list[str], dict[str, str]]:
    return server_command(spec.backend, spec.port, spec.args)


def server_command(backend: str, port: int, args: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """(argv, extra environment) of a local engine of `backend` on 127.0.0.1:`port` with `args`
    (the fixed specs, and the tuning runs' configurations on free ports)."""
    return get_backend(backend).command(port, tuple(args))


def start(engine_id: str, wait: bool = True, register: Register | None = None) -> LocalEngineStatus:
    """Launch one local engine (no-op when it already runs). With `wait`, block until
    /health answers or the engine dies, and raise with its log tail on failure."""
    spec = get_spec(engine_id)
    with state_lock:
        state = read_state()
        entry = state.get(state_key(spec), {})
        if pid_alive(entry.get("pid")):
            current = status(spec.id)[0]
        else:
            if port_busy(spec.port):
                raise EngineError(
                    f"Port {spec.port} is taken by another program, so {spec.id} cannot start there. "
                    "Stop that program, or move all local engines with SHOOTOUT_LOCAL_PORT_BASE=<port>."
                )
            command, extra_env = _command(spec)
            log_path = state_dir() / f"{spec.id}-{spec.port}.log"
            with open(log_path, "ab") as log:
                log.write(
                    f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(command)}\n".encode()
                )
                log.flush()
                process = subprocess.Popen(
                    niced(command),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, **extra_env},
                    start_new_session=True,
                    cwd=str(state_dir()),
                )
            children[process.pid] = process
            state[state_key(spec)] = {
                "pid": process.pid,
                "port": spec.port,
                "log": str(log_path),
                "started": time.time(),
            }
            write_state(state)
            current = status(spec.id)[0]
    if register:
        register(spec)
    if wait:
        current = wait_healthy(spec.id, spec.start_timeout_s)
    return current


def wait_healthy(engine_id: str, timeout_s: float) -> LocalEngineStatus:
    spec = get_spec(engine_id)
    deadline = time.monotonic() + timeout_s
    while True:
        current = status(spec.id)[0]
        if current.status == "running":
            return current
        if current.status != "starting":
            entry = read_state().get(state_key(spec), {})
            tail = log_tail(entry.get("log"))
            reason = death_reason(entry.get("pid"), entry.get("log"))
            mark_failed(spec, f"exited during start-up: {reason}")
            raise EngineError(
                f"{spec.id} exited during start-up: {reason}. Last lines of its log:\n{tail}"
            )
        if time.monotonic() > deadline:
            tail = log_tail(current.log_file)
            raise EngineError(
                f"{spec.id} was not healthy after {timeout_s:.0f} s. Last lines of its log:\n{tail}"
            )
        time.sleep(1.0)


def stop(engine_id: str, timeout_s: float = 20.0) -> LocalEngineStatus:
    """Stop one local engine: SIGTERM to its process group, SIGKILL after `timeout_s`."""
    return stop_many([engine_id], timeout_s)[0]


def stop_many(engine_ids: Iterable[str], timeout_s: float = 20.0) -> list[LocalEngineStatus]:
    """Stop these local engines together: each gets its SIGTERM at once and the waits for their
    exits overlap (one after another, the six took about 10 s, vLLM and SGLang 3 to 4 s each)."""
    chosen = [get_spec(engine_id) for engine_id in engine_ids]
    with state_lock:
        state = read_state()
        entries = {state_key(spec): state.get(state_key(spec), {}) for spec in chosen}
        pids = [entry.get("pid") for entry in entries.values()]
        live = [pid for pid in pids if pid is not None and pid_alive(pid)]
        if live:
            with ThreadPoolExecutor(len(live)) as pool:
                list(pool.map(lambda pid: terminate_group(pid, timeout_s), live))
        for key, entry in entries.items():
            state[key] = {k: v for k, v in entry.items() if k in ("log", "port")}
        write_state(state)
    return [status(spec.id)[0] for spec in chosen]


def up(
    engine_ids: Iterable[str] | None = None,
    install_missing: bool = True,
    log: Callable[[str], None] = print,
    register: Register | None = None,
) -> list[LocalEngineStatus]:
    """Install (when missing) and start the local engines, then wait until each is healthy
    or has failed. Each backend's engines start as soon as its install ends (llama.cpp's two
    while vLLM still installs, say); a backend that fronts the others (the router) starts once
    every other install ended. Never raises for one engine: a failed engine comes back with
    status "failed" and the reason (install error, signal, last log line), the others run.
    The llama.cpp engines start in about 2 s; vLLM compiles on first start (about 2 minutes)."""
    chosen = [get_spec(i) for i in engine_ids] if engine_ids else specs()
    failed: dict[str, str] = {}
    started_at: dict[str, float] = {}
    order = [b.name for b in backends()]
    needed = sorted({s.backend for s in chosen}, key=order.index)
    last = [b for b in needed if get_backend(b).fronts_others]

    def start_backend(backend: str) -> None:
        for spec in chosen:
            if spec.backend == backend and spec.id not in failed:
                try:
                    start(spec.id, wait=False, register=register)
                    started_at[spec.id] = time.monotonic()
                    log(f"{spec.id}: starting on {spec.port}")
                except ShootoutError as error:
                    failed[spec.id] = str(error)

    def installed(backend: str, ok: bool, reason: str) -> None:
        if not ok:
            failed.update({s.id: f"not installed: {reason}" for s in chosen if s.backend == backend})
        elif backend not in last:
            start_backend(backend)

    missing = [b for b in needed if install_missing and not is_installed(b)]
    for backend in needed:
        if backend not in missing:
            installed(backend, True, "")
    if missing:
        try:
            install(missing, log=log, on_done=installed)
        except ShootoutError:
            pass  # each backend's failure came through installed()
    for backend in last:
        start_backend(backend)
    for spec in chosen:
        if spec.id in failed:
            continue
        try:
            current = wait_healthy(spec.id, spec.start_timeout_s)
            took = time.monotonic() - started_at.get(spec.id, time.monotonic())
            log(f"{spec.id}: healthy at {current.url} ({took:.0f} s after its start)")
        except ShootoutError as error:
            failed[spec.id] = str(error).split("\n", 1)[0]
    for engine_id, reason in failed.items():
        log(f"{engine_id}: DID NOT START: {reason}")
        spec = get_spec(engine_id)
        state_now = status(engine_id)[0].status
        if state_now == "starting":  # not healthy in time: do not leave it running unwatched
            stop(engine_id)
        if state_now != "failed":
            mark_failed(spec, reason)
    return [status(s.id)[0] for s in chosen]


def down(engine_ids: Iterable[str] | None = None) -> list[LocalEngineStatus]:
    return stop_many(list(engine_ids) if engine_ids else [s.id for s in all_specs()])


def as_dicts(statuses: list[LocalEngineStatus]) -> list[dict]:
    return [asdict(s) for s in statuses]
