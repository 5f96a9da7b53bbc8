"""Start one tuning configuration on a free port, wait until it is healthy, stop it.

Local engines (llama.cpp, vLLM on this machine) start through `services.local_engines`'s
command builder, bound to 127.0.0.1 on a port the kernel picked. Remote or containerised
engines start from command templates: `{port}`, `{name}` and `{args}` placeholders in an
argv split like a shell would (shlex), run WITHOUT a shell; a token that is exactly `{args}`
becomes the configuration's arguments one by one, and `{args}` inside a longer token (a
command that a remote shell reads, `ssh box "vllm serve {args}"`) becomes them quoted.

Every process started here runs in its own session, and `stop` ends its whole group.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services import local_engines
from services.core import http
from services.core.errors import EngineError
from services.local_engines import machine
from services.local_engines.state import free_port
from services.tune.spec import TuneSpec, setting_args

LOG_TAIL_LINES = 12


class StartFailed(EngineError):
    """A configuration did not become healthy: `reason` in one line, `log_tail` its last lines."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.log_tail = log_tail


@dataclass
class StartedEngine:
    name: str
    port: int
    base_url: str
    health_url: str
    argv: list[str]
    log_path: Path
    process: subprocess.Popen[bytes]
    stop_argv: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def exited(self) -> int | None:
        return self.process.poll()

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


def render_template(template: str, *, port: int, name: str, args: list[str]) -> list[str]:
    """A command template as argv (no shell): see the module's docstring."""
    try:
        tokens = shlex.split(template)
    except ValueError as error:
        raise EngineError(f"The command template does not parse: {error}.") from None
    argv: list[str] = []
    for token in tokens:
        if token == "{args}":
            argv.extend(args)
            continue
        text = token.replace("{port}", str(port)).replace("{name}", name)
        argv.append(text.replace("{args}", shlex.join(args)))
    return argv


def _local_argv(
    spec: TuneSpec, port: int, settings: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    args, env = setting_args(spec.kind, settings)
    args = [*args, *local_engines.get_backend(spec.kind).settings_args(dict(settings))]
    argv, extra = local_engines.server_command(spec.kind, port, args)
    return argv, {**extra, **env}


def start(spec: TuneSpec, settings: Mapping[str, str], *, name: str, log_dir: Path) -> StartedEngine:
    """Launch one configuration (its full settings) and return at once; `wait_healthy` next."""
    port = free_port()
    args, env = setting_args(spec.kind, settings)
    if spec.launcher == "local":
        argv, env = _local_argv(spec, port, settings)
        command = local_engines.niced(argv)
        stop_argv = None
    else:
        argv = render_template(spec.start_command, port=port, name=name, args=args)
        command = argv
        stop_argv = (
            render_template(spec.stop_command, port=port, name=name, args=args)
            if spec.stop_command.strip()
            else None
        )
    base_url = spec.base_url.replace("{port}", str(port))
    health_url = spec.health_url.replace("{base_url}", base_url).replace("{port}", str(port))
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}-{port}.log"
    with open(log_path, "ab") as log:
        log.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {shlex.join(argv)}\n".encode())
        log.flush()
        try:
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **env},
                start_new_session=True,
                cwd=str(log_dir),
            )
        except OSError as error:
            raise StartFailed(f"could not run {argv[0]!r}: {error}") from None
    return StartedEngine(
        name=name,
        port=port,
        base_url=base_url,
        health_url=health_url,
        argv=argv,
        log_path=log_path,
        process=process,
        stop_argv=stop_argv,
        env=env,
    )


def _healthy(url: str) -> bool:
    try:
        return http.fetch("GET", url, deadline_s=2.0, max_bytes=64 * 1024).status == 200
    except http.HttpError:
        return False


def wait_healthy(
    engine: StartedEngine,
    timeout_s: float,
    *,
    templated: bool,
    should_stop: Callable[[], bool] = lambda: False,
) -> bool:
    """True once the health URL answers 200; False when asked to stop first; StartFailed with
    the reason and the log's last lines when the engine exits or the timeout passes. A
    templated start command may exit 0 (`docker run -d`): only a non-zero exit fails it."""
    deadline = time.monotonic() + timeout_s
    while True:
        if should_stop():
            return False
        code = engine.exited()
        if code is not None and (code != 0 or not templated):
            how, _name = _describe_exit(code)
            raise StartFailed(f"exited during start-up ({how})", engine.log_tail())
        if _healthy(engine.health_url):
            return True
        if time.monotonic() > deadline:
            raise StartFailed(f"not healthy after {timeout_s:.0f} s", engine.log_tail())
        time.sleep(0.5)


def _describe_exit(code: int) -> tuple[str, str | None]:
    return machine.describe_exit(code)


def stop(engine: StartedEngine, timeout_s: float = 15.0) -> None:
    """Stop the configuration: its stop template (if any), then SIGTERM to its process group,
    SIGKILL after `timeout_s`; the process is reaped, so its PID is gone when this returns."""
    if engine.stop_argv:
        try:
            subprocess.run(
                engine.stop_argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            pass
    process = engine.process
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=10)
    # Children left in the group (a shell's, a launcher's) go too.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
