"""The registry of engine kinds: one adapter per kind, looked up by name or detected."""

from __future__ import annotations

from typing import TypeVar

from services.engines.base import EngineAdapter, ProbeEvidence

_ADAPTERS: dict[str, EngineAdapter] = {}

A = TypeVar("A", bound=type[EngineAdapter])


def register(cls: A) -> A:
    """Class decorator: make an adapter kind known."""
    _ADAPTERS[cls.kind] = cls()
    return cls


def _load() -> None:
    # Importing the modules runs their @register decorators.
    from services.engines import (  # noqa: F401 - imported for their @register side effect
        llamacpp,
        ollama,
        openai_compat,
        sglang,
        tgi,
        triton,
        trtllm,
        vllm,
    )


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
