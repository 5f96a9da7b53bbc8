"""Sampling parameters as stored (a plain dict) and as each engine gets them, and the
messages of a turn (each engine continues with its own earlier answers)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from services.engines import SamplingParams, get_adapter
from services.engines.endpoints import EngineRecord


def messages_for(system: str, history: list[tuple[str, str]], prompt: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if system.strip():
        messages.append({"role": "system", "content": system})
    for user, assistant in history:
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": assistant})
    messages.append({"role": "user", "content": prompt})
    return messages


def params_dict(params: SamplingParams) -> dict[str, Any]:
    return {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "max_tokens": params.max_tokens,
        "seed": params.seed,
        "stop": list(params.stop),
        "n": params.n,
        "top_k": params.top_k,
        "min_tokens": params.min_tokens,
        "ignore_eos": params.ignore_eos,
    }


def params_from_dict(values: dict[str, Any]) -> SamplingParams:
    known = {
        k: values.get(k) for k in ("temperature", "top_p", "max_tokens", "seed", "top_k", "min_tokens")
    }
    return SamplingParams(
        **known,
        stop=tuple(values.get("stop") or ()),
        n=int(values.get("n") or 1),
        ignore_eos=bool(values.get("ignore_eos")),
    )


def engine_params(record: EngineRecord, params: SamplingParams) -> tuple[SamplingParams, list[str]]:
    """The parameters this engine gets, and notes on what it does not take."""
    adapter = get_adapter(record.kind)
    notes = []
    ignored = [name for name in adapter.unsupported(params) if name != "n"]
    if ignored:
        notes.append(f"{adapter.label} does not take {', '.join(ignored)}: not sent.")
    if params.n > 1 and not adapter.supports_n:
        notes.append(f"{adapter.label} does not support parallel sampling (n > 1): sent n = 1.")
        params = replace(params, n=1)
    return params, notes
