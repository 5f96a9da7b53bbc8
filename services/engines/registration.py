"""Probe an endpoint, then register it: the one use case behind the Engines page's "Probe and
add", `shootout engines add` and `shootout bench --url` (which asks the same question, what kind
and model is this, without storing the answer). Three copies of it had three rules for which
kind and model win: the caller's choice, else what the server said, else generic OpenAI.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.core import cost
from services.engines import endpoints, get_adapter
from services.engines.endpoints import EngineInfo, EngineRecord
from services.engines.probe import ProbeResult, probe


@dataclass(frozen=True)
class Identified:
    """What a server is, as far as a probe and the caller's own choices say."""

    kind: str
    model: str | None
    probe: ProbeResult | None


@dataclass(frozen=True)
class Registration:
    probe: ProbeResult | None
    #: None when the server did not answer and the caller did not ask to store it anyway, or
    #: when `twins` point at the URL already and the caller did not allow a second name.
    record: EngineRecord | None
    #: Other registered engines at the same address (they would count its requests twice).
    twins: list[str] = field(default_factory=list)


def _with_reported(
    found: ProbeResult, kind: str | None, model: str | None
) -> tuple[str | None, str | None]:
    """The caller's kind and model where given, else what the server reported (its first model)."""
    return kind or found.kind, model or (found.models[0] if found.models else None)


def identify(
    url: str,
    *,
    kind: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    timeout_s: float = 5.0,
    probe_first: bool = True,
) -> Identified:
    """The caller's kind and model where given, else what the server reports (an unhealthy but
    answering server still says what it is), else a generic OpenAI-compatible server."""
    found = (
        probe(url, api_key_env=api_key_env, timeout_s=timeout_s)
        if probe_first and (kind is None or model is None)
        else None
    )
    if found is not None and (found.ok or found.state == "unhealthy"):
        kind, model = _with_reported(found, kind, model)
    return Identified(kind=kind or "openai", model=model, probe=found)


def probe_and_register(
    name: str,
    url: str,
    *,
    kind: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    metrics_url: str | None = None,
    store_unreachable: bool = False,
    probe_first: bool = True,
    allow_twin: bool = True,
    usd_per_hour: float | str | None = None,
) -> Registration:
    """Probe `url` and store it as engine `name` when it answered (or when asked to store it
    anyway). Bad names, URLs and key variables raise ValidationError before anything is stored.
    With `allow_twin` False, a URL another engine already points at is not stored (nor probed):
    the caller asks first, since two names for one server count its requests twice."""
    # A bad price is refused before the probe: the user fixes one thing, not two.
    price = cost.parse_usd_per_hour(usd_per_hour)
    if not allow_twin:
        twins = endpoints.same_endpoint(url, except_name=name.strip())
        if twins:
            return Registration(probe=None, record=None, twins=twins)
    found = probe(url, api_key_env=api_key_env) if probe_first else None
    if found is not None and not found.ok and not store_unreachable:
        return Registration(probe=found, record=None)
    info: EngineInfo = {}
    if found is not None and found.ok:
        kind, model = _with_reported(found, kind, model)
        info = {
            "version": found.version,
            "context_length": found.context_length,
            "server": found.server_info,
        }
        if found.kind_label != get_adapter(kind or "openai").label:
            info["served_by"] = found.kind_label
    record = endpoints.add_engine(
        name,
        url,
        kind=kind or "openai",
        model=model,
        api_key_env=api_key_env,
        metrics_url=metrics_url,
        info=info,
        usd_per_hour=price,
    )
    return Registration(
        probe=found,
        record=record,
        twins=endpoints.same_endpoint(record.base_url, except_name=record.name),
    )
