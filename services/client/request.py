"""Building one request: the chat URL, the JSON body (OpenAI fields, the engine adapter's
extras, then the caller's), the headers (the API key read at send time), and the keyword
arguments the openai SDK takes for the same body."""

from __future__ import annotations

import os

from services.client.records import ChatRequest
from services.core.config import key_env_allowed, key_env_refusal
from services.core.json_types import JsonOut
from services.engines import get_adapter

_STANDARD_FIELDS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "n",
        "response_format",
        "frequency_penalty",
        "presence_penalty",
        "logprobs",
        "top_logprobs",
        "user",
        "tools",
        "tool_choice",
    }
)


def chat_url(base_url: str) -> str:
    """The chat-completions URL from a base URL given with or without /v1."""
    url = base_url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"base URL must start with http:// or https:// (got {base_url!r})")
    if url.endswith("/chat/completions"):
        return url
    if url.endswith("/v1"):
        return url + "/chat/completions"
    return url + "/v1/chat/completions"


def request_url(request: ChatRequest) -> str:
    """Where the streaming request goes: OpenAI chat completions, or the path the engine's
    kind names (Triton's `/v2/models/<model>/generate_stream`) from the server root."""
    path = get_adapter(request.kind).stream_path(request.model)
    if path is None:
        return chat_url(request.base_url)
    root = chat_url(request.base_url).removesuffix("/chat/completions").removesuffix("/v1")
    return root + path


def build_body(request: ChatRequest) -> JsonOut:
    """The JSON body: OpenAI fields, then the engine adapter's extras, then `extra_body` (a
    kind with its own wire format builds its body itself; `extra_body` still goes last)."""
    params = request.params
    adapter = get_adapter(request.kind)
    if adapter.wire != "openai":
        own = adapter.stream_body(request.model, request.messages, params)
        if request.extra_body:
            own.update(request.extra_body)
        return own
    body: JsonOut = {"model": request.model, "messages": request.messages, "stream": True}
    if request.include_usage:
        body["stream_options"] = {"include_usage": True}
    if params.temperature is not None:
        body["temperature"] = params.temperature
    if params.top_p is not None:
        body["top_p"] = params.top_p
    if params.max_tokens is not None:
        body["max_tokens"] = params.max_tokens
    if params.seed is not None:
        body["seed"] = params.seed
    if params.stop:
        body["stop"] = list(params.stop)
    if params.n > 1:
        body["n"] = params.n
    body.update(adapter.request_extras(params))
    if request.response_schema is not None:
        body["response_format"] = adapter.response_format(request.response_schema, request.schema_name)
    if request.extra_body:
        body.update(request.extra_body)
    return body


def build_headers(request: ChatRequest, *, resolve_key: bool = True) -> dict[str, str]:
    """Request headers; the API key is read from its environment variable now, never stored."""
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if request.headers:
        headers.update(request.headers)
    if request.api_key_env and resolve_key:
        if not key_env_allowed(request.api_key_env):
            raise KeyError(key_env_refusal(request.api_key_env))
        key = os.environ.get(request.api_key_env)
        if not key:
            raise KeyError(f"environment variable {request.api_key_env} (the API key) is not set")
        headers["authorization"] = f"Bearer {key}"
    return headers


def sdk_kwargs(request: ChatRequest) -> JsonOut:
    """The body as openai-python's `create` arguments: its own fields, the rest in `extra_body`."""
    body = build_body(request)
    kwargs = {k: v for k, v in body.items() if k in _STANDARD_FIELDS}
    extra = {k: v for k, v in body.items() if k not in _STANDARD_FIELDS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs
