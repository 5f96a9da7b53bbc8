"""Probe an endpoint over HTTP: is it up, does it speak OpenAI, which engine kind is it.

The probe GETs a handful of cheap paths at once and hands the answers to the adapters
(`registry.detect_kind`). It never reads /metrics: llama.cpp resets its throughput
gauges on every read and trtllm-serve's JSON /metrics drains a queue.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import httpx2

from services.core import http
from services.core.config import key_env_allowed
from services.core.json_types import ForeignJson, JsonOut
from services.engines.base import HttpAnswer, ProbeEvidence
from services.engines.registry import detect_kind

PROBE_PATHS = (
    "/v1/models",
    "/health",
    "/version",
    "/",
    "/props",
    "/info",
    "/api/version",
    "/v2",
    "/server_info",
    "/get_loads",  # SGLang's router: its version
)
MAX_BODY_BYTES = 256 * 1024

ProbeState = Literal["ok", "unreachable", "auth_required", "not_openai", "unhealthy", "bad_config"]


@dataclass
class ProbeResult:
    """What the Engines page and `shootout engines probe` show."""

    base_url: str
    state: ProbeState
    message: str
    kind: str = "openai"
    kind_label: str = "OpenAI-compatible"
    version: str | None = None
    models: list[str] = field(default_factory=list)
    context_length: int | None = None
    healthy: bool | None = None
    latency_ms: float | None = None
    #: What the engine reports of itself: each answering path's JSON object (`_server_info`).
    server_info: dict[str, ForeignJson] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    def to_dict(self) -> JsonOut:
        return asdict(self)


def auth_headers(api_key_env: str | None) -> dict[str, str]:
    """Authorization from the environment variable NAMED in the engine; the key is never stored."""
    if api_key_env and key_env_allowed(api_key_env) and os.environ.get(api_key_env):
        return {"Authorization": f"Bearer {os.environ[api_key_env]}"}
    return {}


async def _get(
    client: httpx2.AsyncClient,
    base_url: str,
    path: str,
    headers: dict[str, str],
    deadline_s: float,
    method: str = "GET",
) -> HttpAnswer:
    try:
        reply = await http.fetch_async(
            method,
            base_url + path,
            headers=headers,
            deadline_s=deadline_s,
            max_bytes=MAX_BODY_BYTES,
            client=client,
        )
    except http.HttpError as error:
        return HttpAnswer(status=None, error=error.detail, error_reason=error.reason)
    text = reply.text
    body: Any = None
    if "json" in reply.headers.get("content-type", "") or text[:1] in ("{", "[", '"'):
        try:
            body = json.loads(text)
        except ValueError:
            body = None
    return HttpAnswer(status=reply.status, json=body, text=text, headers=reply.headers)


async def gather_evidence(
    base_url: str, api_key_env: str | None = None, timeout_s: float = 5.0
) -> ProbeEvidence:
    """All probe paths at once; each has the whole `timeout_s` as its total deadline and
    MAX_BODY_BYTES as its limit, so the probe ends within `timeout_s` whatever answers."""
    timeout = httpx2.Timeout(timeout_s, connect=min(timeout_s, 3.0))
    headers = auth_headers(api_key_env)
    async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
        answers = await asyncio.gather(
            *(_get(client, base_url, path, headers, timeout_s) for path in PROBE_PATHS)
        )
        evidence = ProbeEvidence(base_url=base_url, answers=dict(zip(PROBE_PATHS, answers, strict=True)))
        # A kind that needs more than these GETs (Triton's repository index, then each model's
        # config) asks for it once detected: two short rounds, only for that kind.
        adapter = detect_kind(evidence)
        for round_of in (adapter.extra_probes, adapter.more_probes):
            asks = round_of(evidence)
            if not asks:
                break
            found = await asyncio.gather(
                *(_get(client, base_url, path, headers, timeout_s, method) for method, path in asks)
            )
            for (method, path), answer in zip(asks, found, strict=True):
                evidence.answers[path if method == "GET" else f"{method} {path}"] = answer
    return evidence


def interpret(evidence: ProbeEvidence, api_key_env: str | None = None) -> ProbeResult:
    """Turn the raw answers into one clear state (pure: unit-tested on recorded evidence)."""
    base_url = evidence.base_url
    models_answer = evidence.get("/v1/models")
    if all(answer.status is None for answer in evidence.answers.values()):
        reason = models_answer.error or "no answer"
        if models_answer.error_reason in ("deadline", "too_large", "protocol", "redirect"):
            # It answered, just not usably: "unreachable" would send the user to check the network.
            return ProbeResult(base_url, "unreachable", f"No usable answer: GET /v1/models {reason}.")
        return ProbeResult(base_url, "unreachable", f"Unreachable: {reason}.")
    if models_answer.status in (401, 403):
        if api_key_env and not os.environ.get(api_key_env):
            hint = f"the environment variable {api_key_env} is not set in the app's environment"
        elif api_key_env:
            hint = f"the key in {api_key_env} was refused"
        else:
            hint = "name the environment variable that holds the key in 'API key env'"
        return ProbeResult(base_url, "auth_required", f"The server wants an API key: {hint}.")
    body = models_answer.json
    adapter = detect_kind(evidence)
    if adapter.wire == "openai" and not (isinstance(body, dict) and isinstance(body.get("data"), list)):
        status = models_answer.status
        detail = f"HTTP {status}" if status is not None else (models_answer.error or "no answer")
        return ProbeResult(
            base_url,
            "not_openai",
            f"Something answers here, but GET /v1/models gave {detail} instead of an OpenAI model list: "
            "is this the engine's API port, and its base URL (without /v1/chat/completions)?",
        )
    health = evidence.get(adapter.health_path)
    healthy = None if health.status is None or health.status == 404 else health.ok
    label = adapter.describe(evidence)
    result = ProbeResult(
        base_url,
        "ok",
        f"{label} is up.",
        kind=adapter.kind,
        kind_label=label,
        version=adapter.version(evidence),
        models=adapter.models(evidence),
        context_length=adapter.context_length(evidence),
        healthy=healthy,
        server_info=_server_info(evidence),
    )
    if healthy is False:
        result.state = "unhealthy"
        result.message = (
            f"{label} answers but {adapter.health_path} says HTTP {health.status} (still loading?)."
        )
    elif not result.models:
        result.message += " It lists no models."
    return result


def _server_info(evidence: ProbeEvidence) -> dict[str, ForeignJson]:
    """The settings the engine reports about itself, kept with runs for later comparison."""
    info: dict[str, ForeignJson] = {}
    for path in ("/version", "/props", "/server_info", "/info", "/v2"):
        answer = evidence.get(path)
        body = answer.json
        if answer.ok and isinstance(body, dict):
            if path == "/props":
                body = {k: v for k, v in body.items() if k != "chat_template"}
            info[path] = body
    return info


def probe(base_url: str, api_key_env: str | None = None, timeout_s: float = 5.0) -> ProbeResult:
    """Probe `base_url` (synchronous; runs its own event loop)."""
    # CLI start: endpoints loads the database (SQLAlchemy, 0.2 s), and `shootout scrape` imports this
    # module without needing it.
    from services.engines.endpoints import normalise_base_url

    url = normalise_base_url(base_url)
    started = time.perf_counter()
    evidence = asyncio.run(gather_evidence(url, api_key_env, timeout_s))
    result = interpret(evidence, api_key_env)
    result.latency_ms = round((time.perf_counter() - started) * 1000, 1)
    return result
