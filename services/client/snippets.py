"""The "copy as code" text of a request: a curl command and openai-python code that send
exactly what the client sends (the key stays in its environment variable)."""

from __future__ import annotations

import json
import pprint
import shlex
from typing import Any

from services.client.records import ChatRequest
from services.client.request import build_body, chat_url, request_url, sdk_kwargs
from services.engines import get_adapter

#: Where a kind with a wire format of its own puts the new text in each streamed event.
_TEXT_FIELD = {"triton_generate": "text_output"}


def as_curl(request: ChatRequest) -> str:
    """The exact request as a curl command (the key stays in its environment variable)."""
    lines = [
        f"curl -N {shlex.quote(request_url(request))}",
        "  -H 'Content-Type: application/json'",
    ]
    if request.api_key_env:
        lines.append(f'  -H "Authorization: Bearer ${request.api_key_env}"')
    for name, value in (request.headers or {}).items():
        lines.append(f"  -H {shlex.quote(f'{name}: {value}')}")
    lines.append(f"  -d {shlex.quote(json.dumps(build_body(request), indent=2, ensure_ascii=False))}")
    return " \\\n".join(lines)


def as_openai_python(request: ChatRequest) -> str:
    """The exact request as openai-python code (extras through `extra_body`); for a kind with a
    wire format of its own (Triton's generate_stream, where /v1/chat/completions is a 404),
    Python's standard library posting the same body to the same URL as the client."""
    wire = get_adapter(request.kind).wire
    if wire != "openai":
        return _as_plain_python(request, _TEXT_FIELD.get(wire, "text_output"))
    base = chat_url(request.base_url).removesuffix("/chat/completions")
    key = f'os.environ["{request.api_key_env}"]' if request.api_key_env else '"none"'
    kwargs = sdk_kwargs(request)
    if request.headers:
        kwargs["extra_headers"] = request.headers
    arguments = "\n".join(f"    {name}={_py(value)}," for name, value in kwargs.items())
    # `os` only when the key is read from the environment: an unused import is the first thing
    # a linter flags in the pasted code (issue 36).
    return (
        ("import os\n\n" if request.api_key_env else "") + "from openai import OpenAI\n\n"
        f"client = OpenAI(base_url={base!r}, api_key={key})\n"
        "stream = client.chat.completions.create(\n"
        f"{arguments}\n"
        ")\n"
        "for chunk in stream:\n"
        "    if chunk.choices and chunk.choices[0].delta.content:\n"
        '        print(chunk.choices[0].delta.content, end="", flush=True)\n'
        "    if chunk.usage:\n"
        "        print()\n"
        "        print(chunk.usage)\n"
    )


def _as_plain_python(request: ChatRequest, text_field: str) -> str:
    headers: dict[str, str] = {"Content-Type": "application/json", **(request.headers or {})}
    key_line = ""
    if request.api_key_env:
        key_line = f'headers["Authorization"] = "Bearer " + os.environ["{request.api_key_env}"]\n'
    return (
        ("import os\n" if request.api_key_env else "") + "import json\nimport urllib.request\n\n"
        f"url = {request_url(request)!r}\n"
        f"body = {_py(build_body(request))}\n"
        f"headers = {_py(headers)}\n"
        f"{key_line}"
        "request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)\n"
        "with urllib.request.urlopen(request, timeout=600) as response:\n"
        "    for line in response:\n"
        '        if line.startswith(b"data:"):\n'
        f"            event = json.loads(line[5:])\n"
        f'            print(event.get({text_field!r}, ""), end="", flush=True)\n'
        "print()\n"
    )


def _py(value: Any) -> str:
    """A Python literal for JSON-like data (True/False/None, not true/false/null)."""
    return pprint.pformat(value, indent=1, width=100, sort_dicts=False).replace("\n", "\n    ")
