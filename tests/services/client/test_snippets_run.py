"""Every "copy as code" sample runs (issue 47: Triton's Python sample called
/v1/chat/completions and got a 404): for each engine kind, the curl command and the Python
code are run as a user would paste them, against the real local engines (llama.cpp, vLLM,
SGLang, Triton, the router) and against the scripted server for the kinds that need a GPU or
a daemon this machine lacks (TGI, Ollama, TensorRT-LLM, plain OpenAI-compatible)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from services import local_engines
from services.client.records import ChatRequest
from services.client.snippets import as_curl, as_openai_python
from services.engines import SamplingParams, get_adapter, kinds
from tests.support.scripted_server import ScriptedServer

#: Kinds with no local engine here, run against the scripted server.
SCRIPTED_KINDS = ("tgi", "ollama", "trtllm", "openai")

MESSAGES = [{"role": "user", "content": "Say hello in three words."}]


def _request(kind: str, base_url: str, model: str) -> ChatRequest:
    # top_k goes through `extra_body` on the OpenAI kinds: the pasted code carries extras too.
    params = SamplingParams(temperature=0.0, max_tokens=8, seed=1, top_k=5)
    return ChatRequest(base_url=base_url, model=model, messages=MESSAGES, params=params, kind=kind)


def _text_of_curl(kind: str, output: str) -> str:
    """The answer's text from the SSE that curl printed (fails on anything but a stream)."""
    key = "text_output" if get_adapter(kind).wire != "openai" else None
    parts: list[str] = []
    for line in output.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        assert not event.get("error"), event
        if key:
            parts.append(event.get(key) or "")
        else:
            parts += [c.get("delta", {}).get("content") or "" for c in event.get("choices", [])]
    return "".join(parts)


def _run_both(kind: str, request: ChatRequest) -> tuple[str, str]:
    """(the answer curl printed, what the Python sample printed); each must exit 0."""
    curl = subprocess.run(
        ["bash", "-c", as_curl(request) + " --silent --show-error --fail-with-body"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert curl.returncode == 0, (as_curl(request), curl.stdout[-800:], curl.stderr[-800:])
    python = subprocess.run(
        [sys.executable, "-c", as_openai_python(request)], capture_output=True, text=True, timeout=300
    )
    assert python.returncode == 0, (as_openai_python(request), python.stderr[-1500:])
    return _text_of_curl(kind, curl.stdout), python.stdout


def test_every_kind_has_its_samples_run_here() -> None:
    """A new kind gets a place in one of the two tests below, or this fails."""
    local = {spec.kind for spec in local_engines.all_specs()}
    assert set(kinds()) <= local | set(SCRIPTED_KINDS), set(kinds()) - local - set(SCRIPTED_KINDS)


@pytest.mark.parametrize("kind", SCRIPTED_KINDS)
def test_samples_run_against_the_scripted_server(kind: str, scripted_server: ScriptedServer) -> None:
    request = _request(kind, scripted_server.base_url, scripted_server.model(tokens=6))
    curl_text, python_out = _run_both(kind, request)
    assert curl_text.strip() and curl_text.strip() in python_out


@pytest.mark.engines
@pytest.mark.parametrize("engine_id", [spec.id for spec in local_engines.all_specs()])
def test_samples_run_against_the_local_engines(engine_id: str, local_engines_running: list) -> None:
    status = next(s for s in local_engines_running if s.id == engine_id)
    assert status.status == "running", f"{engine_id}: {status.message}"
    spec = local_engines.get_spec(engine_id)
    model = local_engines.get_backend(spec.backend).served_model
    curl_text, python_out = _run_both(spec.kind, _request(spec.kind, status.url, model))
    # Real engines answer in their own words (temperature 0 need not repeat across requests on
    # a batching engine): each sample must print an answer, not the same one.
    assert curl_text.strip() and python_out.strip()
    if get_adapter(spec.kind).wire != "openai":
        assert "/v1/chat/completions" not in as_openai_python(_request(spec.kind, status.url, model))
