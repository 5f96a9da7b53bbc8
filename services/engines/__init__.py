"""Engine kinds: one adapter module per kind and a registry (`registry.py`)."""

from services.engines.base import EngineAdapter, HttpAnswer, ProbeEvidence, SamplingParams
from services.engines.registry import adapters, detect_kind, get_adapter, kinds, register

__all__ = [
    "EngineAdapter",
    "HttpAnswer",
    "ProbeEvidence",
    "SamplingParams",
    "adapters",
    "detect_kind",
    "get_adapter",
    "kinds",
    "register",
]
