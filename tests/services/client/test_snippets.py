"""Copy as code: the pasted Python imports only what it uses."""

from __future__ import annotations

import ast

from services.client.records import ChatRequest
from services.client.snippets import as_openai_python
from services.engines import SamplingParams


def _request(api_key_env: str | None) -> ChatRequest:
    return ChatRequest(
        base_url="http://127.0.0.1:8081/v1",
        model="smollm2",
        messages=[{"role": "user", "content": "hi"}],
        params=SamplingParams(max_tokens=8),
        kind="llamacpp",
        api_key_env=api_key_env,
    )


def _imports(code: str) -> set[str]:
    tree = ast.parse(code)
    return {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }


def test_os_is_imported_only_for_a_key_from_the_environment() -> None:
    """Issue 36: the snippet imported `os` for nothing when the engine needs no key."""
    without_key = as_openai_python(_request(None))
    assert "os" not in _imports(without_key) and 'api_key="none"' in without_key
    with_key = as_openai_python(_request("VLLM_KEY"))
    assert "os" in _imports(with_key) and 'os.environ["VLLM_KEY"]' in with_key


def test_the_openai_snippet_says_what_to_install_first() -> None:
    """Issue 56: pasted into a fresh environment, `from openai import OpenAI` failed without a
    word about `pip install openai`. The standard-library snippet (Triton) needs nothing."""
    code = as_openai_python(_request(None))
    assert code.splitlines()[0] == "# pip install openai"
    ast.parse(code)
    triton = ChatRequest(
        base_url="http://127.0.0.1:8085",
        model="smollm2",
        messages=[{"role": "user", "content": "hi"}],
        params=SamplingParams(max_tokens=8),
        kind="triton",
    )
    assert "pip install" not in as_openai_python(triton)
