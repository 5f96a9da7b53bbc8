"""The "copy as code" text of a request: a curl command and Python code that send exactly what
the client sends (the key stays in its environment variable). Python is openai-python for the
kinds that speak OpenAI chat, and the standard library's urllib for a kind with its own API
(Triton's `generate_stream`), which openai-python cannot call (issue 47: it got a 404).
Every kind's samples run in tests/services/client/test_snippets_run.py."""

from __future__ import annotations

import json
import pprint
import shlex
from typing import Any

from services.client.records import ChatRequest
from services.client.request import build_body, chat_url, request_url, sdk_kwargs
from services.engines import get_adapter


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
    """The exact request as Python: openai-python code (extras through `extra_body`), or, for a
    kind with its own API, plain urllib against that API."""
    if get_adapter(request.kind).wire != "openai":
        return _own_api_python(request)
    base = chat_url(request.base_url).removesuffix("/chat/completions")
    key = f'os.environ["{request.api_key_env}"]' if request.api_key_env else '"none"'
    kwargs = sdk_kwargs(request)
    if request.headers:
        kwargs["extra_headers"] = request.headers
    arguments = "\n".join(f"    {name}={_py(value)}," for name, value in kwargs.items())
    # `os` only when the key is read from the environment: an unused import is the first thing
    # a linter flags in the pasted code (issue 36). `openai` is the one package it needs beyond
    # the standard library, named first: a fresh environment has none (issue 56).
    return (
        "# pip install openai\n"
        + ("import os\n\n" if request.api_key_env else "")
        + "from openai import OpenAI\n\n"
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


def _own_api_python(request: ChatRequest) -> str:
    """The request to an engine's own streaming API (Triton's generate extension: one SSE event
    per response, `text_output` the new text) with the standard library only."""
    headers: dict[str, str] = {"Content-Type": "application/json", **(request.headers or {})}
    header_lines = "".join(f"    {name!r}: {value!r},\n" for name, value in headers.items())
    if request.api_key_env:
        header_lines += f'    "Authorization": "Bearer " + os.environ["{request.api_key_env}"],\n'
    return (
        ("import os\n" if request.api_key_env else "") + "import json\nimport urllib.request\n\n"
        f"body = {_py(build_body(request))}\n"
        "headers = {\n"
        f"{header_lines}"
        "}\n"
        "request = urllib.request.Request(\n"
        f"    {request_url(request)!r},\n"
        "    data=json.dumps(body).encode(),\n"
        "    headers=headers,\n"
        ")\n"
        "with urllib.request.urlopen(request, timeout=300) as response:\n"
        "    for line in response:\n"
        '        if not line.startswith(b"data: "):\n'
        "            continue\n"
        "        event = json.loads(line[6:])\n"
        '        if event.get("error"):\n'
        '            raise SystemExit(event["error"])\n'
        '        print(event.get("text_output", ""), end="", flush=True)\n'
        "print()\n"
    )


def _py(value: Any) -> str:
    """A Python literal for JSON-like data (True/False/None, not true/false/null)."""
    return pprint.pformat(value, indent=1, width=100, sort_dicts=False).replace("\n", "\n    ")
