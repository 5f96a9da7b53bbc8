"""What a local engine backend is, and the registry of them.

A backend is one way of running an engine kind on this machine: how to install it (its own
virtual environment under the engines dir), whether it is installed and proven, the command
that serves the model on a port, and the fixed specs (ids, ports, arguments) it offers. Each
lives with its engine kind (`services/engines/<kind>/local.py`); this package only runs them.
Adding a local engine is one such module.

The kinds sit above this package (their backends build on it), so it cannot find them: the
kinds' registry (services/engines/registry.py) lends it the loader when it is imported. Every
entry point that reads the catalog imports services.engines anyway (the pages, `shootout local`
for `endpoints.register_local`, tune); one that does not gets a clear error, not an empty list.
Why not pass the backends in: dozens of call sites read the catalog (specs, status, start) and
none holds a list of backends; the one that knows where the kinds are lends it once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from services.core.errors import ValidationError

Log = Callable[[str], None]


@dataclass(frozen=True)
class LocalEngineSpec:
    id: str
    kind: str
    label: str
    port: int
    args: tuple[str, ...]
    start_timeout_s: float
    description: str
    #: Where its Prometheus metrics are when not on the server's own port (SGLang's router):
    #: its registry entry gets this metrics URL.
    metrics_port: int | None = None
    #: What serves it where the kind's label says less (Triton's backend): the registry entry's label.
    served_by: str | None = None

    @property
    def backend(self) -> str:
        """Its backend's name: a kind's one backend (its `local.py`) is named as the kind."""
        return self.kind


class LocalBackend:
    """One backend. Subclasses set the class attributes and implement the methods."""

    name: ClassVar[str]
    #: Install and start order (low first): a router comes last, since it fronts engines that
    #: must already run.
    start_order: ClassVar[int] = 50
    #: It fronts the other engines (a router): it starts once every other install has ended.
    fronts_others: ClassVar[bool] = False
    #: Who gets the cores while installs run side by side (low first): on a small machine the
    #: backend that puts two engines up soonest installs at full priority and the others run
    #: niced behind it (installer.install_niceness), so the Playground has a pair to compare
    #: minutes before the last install ends (issue 58).
    install_priority: ClassVar[int] = 1
    #: About how long a start takes until the engine answers, on 2 cores (docs/figures.md): what
    #: the Playground says of an engine still starting. 0: not known.
    typical_start_s: ClassVar[float] = 0.0
    #: What the installer says before it starts: what it installs and about how big it is.
    install_note: ClassVar[str] = ""
    #: The path that answers 200 once the engine serves (from the server root).
    health_path: ClassVar[str] = "/health"
    #: The model name clients send (the registry entry's model).
    served_model: ClassVar[str]

    def specs(self) -> list[LocalEngineSpec]:
        raise NotImplementedError

    def installed(self) -> bool:
        raise NotImplementedError

    def install(self, log: Log) -> None:
        raise NotImplementedError

    def command(self, port: int, args: tuple[str, ...] | list[str]) -> tuple[list[str], dict[str, str]]:
        """(argv, extra environment) serving the model on 127.0.0.1:`port` with `args`."""
        raise NotImplementedError

    def settings_args(self, settings: dict[str, str]) -> list[str]:
        """Arguments a tuning run adds to every configuration of this backend (beyond its
        settings' own flags)."""
        return []


_BACKENDS: dict[str, LocalBackend] = {}


def register_backend(cls: type[LocalBackend]) -> type[LocalBackend]:
    _BACKENDS[cls.name] = cls()
    return cls


#: Imports each kind's `local.py`, which registers its backend: lent by the kinds' registry.
_loader: list[Callable[[], object]] = []


def lend_loader(load: Callable[[], object]) -> None:
    _loader[:] = [load]


def _load() -> None:
    if not _loader:
        raise RuntimeError("No engine kinds loaded: import services.engines before the local engines.")
    _loader[0]()


def backends() -> list[LocalBackend]:
    """Every backend, in install and start order."""
    _load()
    return sorted(_BACKENDS.values(), key=lambda b: (b.start_order, b.name))


def backend_names() -> tuple[str, ...]:
    return tuple(b.name for b in backends())


def get_backend(name: str) -> LocalBackend:
    _load()
    found = _BACKENDS.get(name)
    if found is None:
        raise ValidationError(
            f"Unknown local backend {name!r}; the backends are: {', '.join(backend_names())}."
        )
    return found
