"""Sampling parameters as stored (a plain dict) and as each engine gets them, and the
messages of a turn (each engine continues with its own earlier answers)."""

from __future__ import annotations

from dataclasses import replace

from services.core.json_types import ForeignJson
from services.engines import SamplingParams, adapters, get_adapter
from services.engines.endpoints import EngineRecord
from services.playground.records import StoredParams


def messages_for(system: str, history: list[tuple[str, str]], prompt: str) -> list[ForeignJson]:
    """The OpenAI chat messages of a turn."""
    messages: list[ForeignJson] = []
    if system.strip():
        messages.append({"role": "system", "content": system})
    for user, assistant in history:
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": assistant})
    messages.append({"role": "user", "content": prompt})
    return messages


def params_dict(params: SamplingParams) -> StoredParams:
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


def params_from_dict(values: StoredParams) -> SamplingParams:
    return SamplingParams(
        temperature=values.get("temperature"),
        top_p=values.get("top_p"),
        max_tokens=values.get("max_tokens"),
        seed=values.get("seed"),
        top_k=values.get("top_k"),
        min_tokens=values.get("min_tokens"),
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


#: A hidden answer's note whose words could not be kept (a form `engine_params` never wrote).
_UNSAID = "did not take a setting as asked (the note names the engine: shown after the vote)."


def blind_notes(notes: list[str], who: str) -> list[str]:
    """A hidden answer's notes said of `who`'s engine ("Answer B's engine does not take top_k:
    not sent"): a kind's name under an answer says who wrote it as plainly as its title would.
    `engine_params` starts each note with a kind's label; a note that does not, or that names
    a kind after it, keeps only what it is about."""
    names = sorted({word for a in adapters() for word in (a.label, a.kind)}, key=len, reverse=True)
    shown = []
    for note in notes:
        text = str(note)
        subject = next((name for name in names if text.startswith(f"{name} ")), None)
        rest = text[len(subject) :] if subject is not None else ""
        if subject is None or any(name.lower() in rest.lower() for name in names):
            shown.append(f"{who}'s engine {_UNSAID}")
        else:
            shown.append(f"{who}'s engine{rest}")
    return shown
