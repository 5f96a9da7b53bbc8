"""The stored list of engine endpoints (the registry the pages and the CLI pick from)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

from sqlalchemy import select

from db.models import Engine
from db.session import session_scope
from services.core import cost
from services.core.config import key_env_allowed, key_env_refusal
from services.core.errors import ConflictError, NotFoundError, ValidationError
from services.core.json_types import ForeignJson
from services.core.urls import check_url, http_url
from services.engines import get_adapter, kinds
from services.local_engines.backend import LocalEngineSpec, get_backend
from services.local_engines.sharing import live_ids

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
ENV_VAR_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")


class EngineInfo(TypedDict, total=False):
    """What the registry keeps of an engine beside its columns (`Engine.info`): what its probe
    found when it was added, or what the local engine or tuning run that added it says of it."""

    # The probe's findings (services/engines/registration.py).
    version: str | None
    context_length: int | None
    #: What the engine reported of itself, by path ("/props", "/server_info", ...).
    server: dict[str, ForeignJson]
    #: What serves it, where that says more than its kind's label.
    served_by: str
    # A local engine's (`register_local`).
    local: bool
    description: str
    dtype: str
    # A tuning run's winner (services/tune/view.py).
    tuned_by_run: int
    settings: dict[str, str]
    launch: str | None
    launch_docker: str | None


@dataclass(frozen=True)
class EngineRecord:
    """An engine as pages and services see it (never holds an API key)."""

    id: int
    name: str
    base_url: str
    kind: str
    model: str | None
    api_key_env: str | None
    metrics_url: str | None
    local_id: str | None
    info: EngineInfo = field(default_factory=EngineInfo)
    #: What an hour of it costs (the instance, or the GPUs it uses); None: not priced.
    usd_per_hour: float | None = None

    @property
    def label(self) -> str:
        """What serves it: the probe's or the local engine's name for it where that says more
        than the kind ("Triton (Python backend)", never plain "Triton"), else the kind's label."""
        served_by = self.info.get("served_by")
        return served_by if isinstance(served_by, str) and served_by else get_adapter(self.kind).label

    @property
    def resolved_metrics_url(self) -> str | None:
        """Where its Prometheus metrics are: the explicit URL, else base URL + the kind's path."""
        if self.metrics_url:
            return self.metrics_url
        path = get_adapter(self.kind).metrics_path
        return self.base_url + path if path else None


def _record(row: Engine) -> EngineRecord:
    return EngineRecord(
        id=row.id,
        name=row.name,
        base_url=row.base_url,
        kind=row.kind,
        model=row.model,
        api_key_env=row.api_key_env,
        metrics_url=row.metrics_url,
        local_id=row.local_id,
        # The column holds what this module wrote there (any version: every key optional).
        info=cast(EngineInfo, dict(row.info or {})),
        usd_per_hour=row.usd_per_hour,
    )


def normalise_base_url(url: str) -> str:
    """`http://host:port[/prefix]` without a trailing slash or `/v1`; rejects anything else."""
    url, parts = check_url(url, "URL")
    if parts.query or parts.fragment:
        raise ValidationError("The URL must not carry a query string or fragment.")
    path = parts.path.rstrip("/")
    path = path.removesuffix("/v1")
    return f"{parts.scheme}://{parts.netloc.lower() if not parts.netloc.startswith('[') else parts.netloc}{path}"


def same_endpoint(base_url: str, *, except_name: str | None = None) -> list[str]:
    """Names of registered engines that already point at this base URL (a duplicate is
    allowed, e.g. one server under two models, but it is worth a warning)."""
    url = normalise_base_url(base_url)
    with session_scope() as session:
        rows = session.scalars(select(Engine).where(Engine.base_url == url)).all()
        return sorted(row.name for row in rows if row.name != except_name)


def _normalise_metrics_url(url: str | None) -> str | None:
    """A full metrics URL (Triton serves them on another port: http://host:8002/metrics)."""
    if not (url or "").strip():
        return None
    return http_url(url or "", "metrics URL")


def _validate(name: str, kind: str, api_key_env: str | None) -> None:
    if not NAME_PATTERN.match(name or ""):
        raise ValidationError(
            "Engine names are 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit."
        )
    if kind not in kinds():
        raise ValidationError(f"Unknown engine kind {kind!r}; known: {', '.join(kinds())}.")
    if api_key_env and not ENV_VAR_PATTERN.match(api_key_env):
        raise ValidationError(
            "The API key setting is the NAME of an environment variable (like OPENAI_API_KEY), not the key."
        )
    if api_key_env and not key_env_allowed(api_key_env):
        raise ValidationError(key_env_refusal(api_key_env))


def list_engines() -> list[EngineRecord]:
    with session_scope() as session:
        return [_record(row) for row in session.scalars(select(Engine).order_by(Engine.name))]


def default_picks(
    engines: list[EngineRecord], count: int = 2, live: Collection[str] | None = None
) -> list[str]:
    """The engines every comparing page starts with (Playground, Benchmarks, Parity; issue 47:
    each page picked its own): a vLLM engine first (the usual reference), then engines of
    other kinds, SGLang first (it serves the same HF weights, so a difference is the
    engine's), then the rest in name order; `count` of them. Local engines whose process is
    not `live` (by default the local launcher's word: stopped, or still installing in the
    first minute) are left out while two others can be picked (issue 48)."""
    if live is None:
        live = live_ids()
    up = [e for e in engines if e.local_id is None or e.local_id in live]
    if len(up) >= min(count, 2):
        engines = up
    vllm = [e for e in engines if e.kind == "vllm"]
    others = sorted((e for e in engines if e.kind != "vllm"), key=lambda e: (e.kind != "sglang", e.name))
    picks = [*vllm[:1], *others, *vllm[1:]]
    # Two of the same kind only when nothing else is registered.
    kinds_first = [e for i, e in enumerate(picks) if e.kind not in {p.kind for p in picks[:i]}]
    ordered = kinds_first + [e for e in picks if e not in kinds_first]
    return [e.name for e in ordered[:count]]


def register_local(spec: LocalEngineSpec) -> EngineRecord:
    """Put a local engine in the registry (or bring its entry up to date): what the local
    engines' `start` and `up` are given as `register`."""
    url = f"http://127.0.0.1:{spec.port}"
    info: EngineInfo = {"local": True, "description": spec.description}
    if spec.served_by:
        info["served_by"] = spec.served_by
    if "--dtype" in spec.args[:-1]:
        # Compare's settings diff names the weights' dtype (issue 47); vLLM does not report it.
        info["dtype"] = spec.args[spec.args.index("--dtype") + 1]
    model = get_backend(spec.backend).served_model
    metrics_url = f"http://127.0.0.1:{spec.metrics_port}/metrics" if spec.metrics_port else None
    try:
        get_engine(spec.id)
    except NotFoundError:
        return add_engine(
            spec.id,
            url,
            kind=spec.kind,
            model=model,
            local_id=spec.id,
            info=info,
            metrics_url=metrics_url,
        )
    # Without a metrics port of its own, the engine keeps the metrics URL it has.
    metrics = {} if metrics_url is None else {"metrics_url": metrics_url}
    return update_engine(
        spec.id, base_url=url, kind=spec.kind, model=model, local_id=spec.id, info=info, **metrics
    )


def get_engine(name: str) -> EngineRecord:
    with session_scope() as session:
        row = session.scalar(select(Engine).where(Engine.name == name))
        if row is None:
            raise NotFoundError(
                f"No engine named {name!r}. Add it first (Engines page or `shootout engines add`)."
            )
        return _record(row)


def add_engine(
    name: str,
    base_url: str,
    *,
    kind: str = "openai",
    model: str | None = None,
    api_key_env: str | None = None,
    metrics_url: str | None = None,
    local_id: str | None = None,
    info: EngineInfo | None = None,
    usd_per_hour: float | str | None = None,
) -> EngineRecord:
    name = (name or "").strip()
    api_key_env = (api_key_env or "").strip() or None
    _validate(name, kind, api_key_env)
    url = normalise_base_url(base_url)
    metrics = _normalise_metrics_url(metrics_url)
    price = cost.parse_usd_per_hour(usd_per_hour)
    with session_scope() as session:
        if session.scalar(select(Engine.id).where(Engine.name == name)) is not None:
            raise ConflictError(
                f"An engine named {name!r} exists already; choose another name or edit it."
            )
        row = Engine(
            name=name,
            base_url=url,
            kind=kind,
            model=(model or "").strip() or None,
            api_key_env=api_key_env,
            metrics_url=metrics,
            local_id=local_id,
            info=info or {},
            usd_per_hour=price,
        )
        session.add(row)
        session.flush()
        return _record(row)


def update_engine(name: str, /, **changes: Any) -> EngineRecord:
    """Change fields of an engine (name, base_url, kind, model, api_key_env, metrics_url, info,
    usd_per_hour: an empty one removes the price)."""
    allowed = {
        "name",
        "base_url",
        "kind",
        "model",
        "api_key_env",
        "metrics_url",
        "info",
        "local_id",
        "usd_per_hour",
    }
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError(f"Cannot change {', '.join(sorted(unknown))}.")
    with session_scope() as session:
        row = session.scalar(select(Engine).where(Engine.name == name))
        if row is None:
            raise NotFoundError(f"No engine named {name!r}.")
        new_name = (changes.get("name") or row.name).strip()
        new_kind = changes.get("kind") or row.kind
        new_key_env = changes.get("api_key_env", row.api_key_env)
        new_key_env = (new_key_env or "").strip() or None
        _validate(new_name, new_kind, new_key_env)
        if (
            new_name != row.name
            and session.scalar(select(Engine.id).where(Engine.name == new_name)) is not None
        ):
            raise ConflictError(f"An engine named {new_name!r} exists already.")
        row.name = new_name
        row.kind = new_kind
        row.api_key_env = new_key_env
        if "base_url" in changes:
            row.base_url = normalise_base_url(changes["base_url"])
        if "model" in changes:
            row.model = (changes["model"] or "").strip() or None
        if "metrics_url" in changes:
            row.metrics_url = _normalise_metrics_url(changes["metrics_url"])
        if "info" in changes:
            row.info = dict(changes["info"] or {})
        if "local_id" in changes:
            row.local_id = changes["local_id"]
        if "usd_per_hour" in changes:
            row.usd_per_hour = cost.parse_usd_per_hour(changes["usd_per_hour"])
        session.flush()
        return _record(row)


def remove_engine(name: str) -> None:
    """Forget an endpoint. Stored runs keep their own snapshot of it."""
    with session_scope() as session:
        row = session.scalar(select(Engine).where(Engine.name == name))
        if row is None:
            raise NotFoundError(f"No engine named {name!r}.")
        session.delete(row)
