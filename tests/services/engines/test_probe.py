"""Engine detection and probe states: recorded answers of every kind (from the engines'
documented endpoints), and live probes of the real local engines."""

from __future__ import annotations

import socket

import pytest

from services.engines import ProbeEvidence, get_adapter
from services.engines.base import HttpAnswer, SamplingParams
from services.engines.probe import interpret, probe


def evidence(**answers: HttpAnswer) -> ProbeEvidence:
    mapping = {
        "v1_models": "/v1/models",
        "root": "/",
        "version": "/version",
        "props": "/props",
        "info": "/info",
        "api_version": "/api/version",
        "v2": "/v2",
        "server_info": "/server_info",
        "health": "/health",
    }
    return ProbeEvidence("http://x:1", {mapping[k]: v for k, v in answers.items()})


def models(owned_by: str, model_id: str = "m", **extra) -> HttpAnswer:  # type: ignore[no-untyped-def]
    return HttpAnswer(200, {"object": "list", "data": [{"id": model_id, "owned_by": owned_by, **extra}]})


NOT_FOUND = HttpAnswer(404, {"detail": "Not Found"})


@pytest.mark.parametrize(
    ("answers", "kind", "version"),
    [
        (
            {
                "v1_models": models("vllm", max_model_len=8192),
                "version": HttpAnswer(200, {"version": "0.33.0"}),
            },
            "vllm",
            "0.33.0",
        ),
        (
            {
                "v1_models": models("sglang"),
                "root": HttpAnswer(200, "SGLang is running", text='"SGLang is running"'),
                "server_info": HttpAnswer(200, {"version": "0.5.23", "tp_size": 2}),
            },
            "sglang",
            "0.5.23",
        ),
        # SGLang can be told to answer "Ollama is running" on GET /: owned_by still wins.
        (
            {
                "v1_models": models("sglang"),
                "root": HttpAnswer(200, None, text="Ollama is running"),
                "api_version": HttpAnswer(200, {"version": "x"}),
            },
            "sglang",
            None,
        ),
        (
            {"v1_models": models("tensorrt_llm"), "version": HttpAnswer(200, {"version": "1.2.1"})},
            "trtllm",
            "1.2.1",
        ),
        (
            {
                "v1_models": models("llamacpp"),
                "props": HttpAnswer(
                    200,
                    {
                        "build_info": "b7000-abc",
                        "total_slots": 4,
                        "default_generation_settings": {"n_ctx": 2048},
                    },
                ),
            },
            "llamacpp",
            "b7000-abc",
        ),
        (
            {
                "v1_models": models("meta-llama/Llama-3.1-8B"),
                "info": HttpAnswer(
                    200,
                    {"router": "text-generation-router", "version": "3.3.6", "max_total_tokens": 8192},
                ),
            },
            "tgi",
            "3.3.6",
        ),
        (
            {
                "v1_models": models("library"),
                "root": HttpAnswer(200, None, text="Ollama is running"),
                "api_version": HttpAnswer(200, {"version": "0.33.0"}),
            },
            "ollama",
            "0.33.0",
        ),
        (
            {
                "v1_models": models("system"),
                "v2": HttpAnswer(200, {"name": "triton", "version": "2.60.0"}),
            },
            "triton",
            "2.60.0",
        ),
        ({"v1_models": models("someone"), "root": NOT_FOUND}, "openai", None),
    ],
)
def test_detects_each_kind(answers: dict, kind: str, version: str | None) -> None:
    result = interpret(evidence(**answers))
    assert result.state == "ok"
    assert result.kind == kind
    assert result.version == version


def test_context_length_per_kind() -> None:
    assert interpret(evidence(v1_models=models("vllm", max_model_len=4096))).context_length == 4096
    llama = evidence(
        v1_models=models("llamacpp"),
        props=HttpAnswer(200, {"default_generation_settings": {"n_ctx": 2048}}),
    )
    assert interpret(llama).context_length == 2048


def test_states_in_plain_words(monkeypatch: pytest.MonkeyPatch) -> None:
    down = interpret(
        evidence(v1_models=HttpAnswer(None, error="connection refused (nothing listens on that port)"))
    )
    assert down.state == "unreachable" and "connection refused" in down.message
    monkeypatch.delenv("MISSING_KEY_VAR", raising=False)
    auth = interpret(
        evidence(v1_models=HttpAnswer(401, {"error": "unauthorized"})), api_key_env="MISSING_KEY_VAR"
    )
    assert auth.state == "auth_required" and "MISSING_KEY_VAR is not set" in auth.message
    html = interpret(evidence(v1_models=HttpAnswer(200, None, text="<html>hello</html>")))
    assert html.state == "not_openai" and "OpenAI model list" in html.message
    loading = interpret(
        evidence(v1_models=models("llamacpp"), health=HttpAnswer(503, {"error": "Loading model"}))
    )
    assert loading.state == "unhealthy"


def test_request_extras_follow_the_adapter() -> None:
    params = SamplingParams(top_k=20, min_tokens=5, ignore_eos=True, n=2)
    assert get_adapter("vllm").request_extras(params) == {
        "top_k": 20,
        "min_tokens": 5,
        "ignore_eos": True,
    }
    assert get_adapter("llamacpp").request_extras(params) == {"top_k": 20, "ignore_eos": True}
    assert get_adapter("llamacpp").unsupported(params) == ["min_tokens"]
    assert get_adapter("tgi").unsupported(params) == ["top_k", "min_tokens", "ignore_eos", "n"]
    assert get_adapter("tgi").response_format({"type": "object"}) == {
        "type": "json",
        "value": {"type": "object"},
    }
    assert get_adapter("nonsense").kind == "openai"


def test_probe_refused_port_and_bad_host() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connection refused
        result = probe(f"http://127.0.0.1:{port}", timeout_s=2)
    assert result.state == "unreachable" and "refused" in result.message
    assert probe("http://no-such-host.invalid:80", timeout_s=2).state == "unreachable"


def test_probe_non_openai_http_server(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A plain web server (not an engine) answers, but not as an OpenAI API."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = probe(f"http://127.0.0.1:{server.server_port}", timeout_s=3)
    finally:
        server.shutdown()
    assert result.state == "not_openai"


@pytest.mark.engines
def test_probe_real_local_engines(all_local_engines_up) -> None:  # type: ignore[no-untyped-def]
    from services.local_engines import get_spec

    llama = probe(f"http://127.0.0.1:{get_spec('llamacpp-4slot').port}")
    assert (llama.state, llama.kind) == ("ok", "llamacpp")
    assert llama.models == ["SmolLM2-135M-Instruct"]
    assert llama.context_length == 2048  # 8192 shared by 4 slots
    vllm = probe(f"http://127.0.0.1:{get_spec('vllm-cpu').port}/v1")
    assert (vllm.state, vllm.kind, vllm.models, vllm.context_length) == ("ok", "vllm", ["smollm2"], 4096)
    assert vllm.version and vllm.version.startswith("0.32")


def test_llamacpp_without_an_alias_is_named_by_its_gguf_file() -> None:
    """Issue 19: started without --alias, llama-server lists the GGUF path as its model."""
    path = "/srv/models/SmolLM2-135M-Instruct.Q4_1.gguf"
    result = interpret(
        evidence(
            v1_models=models("llamacpp", path),
            props=HttpAnswer(200, {"default_generation_settings": {"n_ctx": 2048}}),
        )
    )
    assert result.kind == "llamacpp" and result.models == ["SmolLM2-135M-Instruct.Q4_1.gguf"]
