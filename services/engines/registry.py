"""The registry of engine kinds: one adapter per kind, looked up by name or detected."""

from __future__ import annotations

import pkgutil
from functools import cache, partial
from importlib import import_module
from importlib.util import find_spec
from types import ModuleType
from typing import TypeVar

from services.engines.base import EngineAdapter, ProbeEvidence
from services.local_engines.backend import lend_loader

_ADAPTERS: dict[str, EngineAdapter] = {}

A = TypeVar("A", bound=type[EngineAdapter])


def register(cls: A) -> A:
    """Class decorator: make an adapter kind known."""
    _ADAPTERS[cls.kind] = cls()
    return cls


@cache
def _load() -> None:
    """Import every kind package (each `services/engines/<kind>/` is one kind), which runs its
    adapter's @register: a new kind is a new package, and no list here names it."""
    # Its own package: services/engines/__init__.py imports this module.
    import services.engines as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg:
            import_module(f"{package.__name__}.{info.name}")


@cache
def kind_parts(part: str) -> tuple[tuple[str, ModuleType], ...]:
    """(kind, module) for every kind package with a `part` module (`launch`, `tuning`), found
    on disk: a kind's package is its one home, and no list elsewhere has to name it."""
    # Its own package: services/engines/__init__.py imports this module.
    import services.engines as package

    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
        name = f"{package.__name__}.{info.name}.{part}"
        if info.ispkg and find_spec(name) is not None:
            found.append((info.name, import_module(name)))
    return tuple(found)


def adapters() -> list[EngineAdapter]:
    """Every adapter, the most specific first."""
    _load()
    return sorted(_ADAPTERS.values(), key=lambda a: -a.priority)


def kinds() -> list[str]:
    return [a.kind for a in adapters()]


def get_adapter(kind: str | None) -> EngineAdapter:
    """The adapter of `kind`; unknown or empty kinds fall back to generic OpenAI."""
    _load()
    return _ADAPTERS.get(kind or "openai") or _ADAPTERS["openai"]


def detect_kind(evidence: ProbeEvidence) -> EngineAdapter:
    for adapter in adapters():
        if adapter.kind != "openai" and adapter.detect(evidence):
            return adapter
    return get_adapter("openai")


# The local engines' launcher sits below the kinds: it finds their backends (each kind's
# `local.py`) through this registry.
lend_loader(partial(kind_parts, "local"))
