"""What the kinds declare instead of writing: the evidence walk, the extras a request asks, the
metrics format, the version and owned_by records, and what every launch command shares."""

from __future__ import annotations

from dataclasses import replace

from services.engines import get_adapter
from services.engines.base import HttpAnswer, ProbeEvidence, SamplingParams
from services.engines.launching import LaunchOptions, get_launch
from services.planner.launch import build_launch


def test_value_walks_json_objects_and_stops_at_anything_else() -> None:
    evidence = ProbeEvidence(
        "http://x:1",
        {
            "/props": HttpAnswer(200, {"a": {"b": 3}, "list": [1]}),
            "/text": HttpAnswer(200, None, text="hi"),
        },
    )
    assert evidence.value("/props", "a", "b") == 3
    assert evidence.value("/props", "list", "b") is None
    assert evidence.value("/props", "missing", "b") is None
    assert evidence.value("/text", "a") is None
    assert evidence.value("/never") is None


def test_says_needs_a_successful_answer() -> None:
    evidence = ProbeEvidence(
        "http://x:1",
        {
            "/": HttpAnswer(200, None, text="Ollama is running"),
            "/bad": HttpAnswer(500, None, text="Ollama"),
        },
    )
    assert evidence.says("/", "Ollama is running")
    assert not evidence.says("/bad", "Ollama")
    assert not evidence.says("/never", "")


def test_extras_are_what_a_request_sets_and_a_zero_still_counts() -> None:
    assert SamplingParams().extras() == {}
    assert SamplingParams(top_k=0, min_tokens=0).extras() == {"top_k": 0, "min_tokens": 0}
    assert SamplingParams(ignore_eos=True).extras() == {"ignore_eos": True}
    params = SamplingParams(top_k=5, min_tokens=2, ignore_eos=True, n=2)
    assert get_adapter("llamacpp").request_extras(params) == {"top_k": 5, "ignore_eos": True}
    assert get_adapter("llamacpp").unsupported(params) == ["min_tokens"]
    assert get_adapter("ollama").unsupported(params) == ["top_k", "min_tokens", "ignore_eos", "n"]


def test_the_metrics_format_follows_the_metrics_path() -> None:
    assert get_adapter("vllm").metrics_format == "prometheus"
    assert get_adapter("trtllm").metrics_format == "prometheus"
    assert get_adapter("ollama").metrics_format == "none"


def test_declared_owned_by_and_version_places_are_read_in_order() -> None:
    sglang = get_adapter("sglang")
    only_version = ProbeEvidence("http://x:1", {"/version": HttpAnswer(200, {"version": "0.5"})})
    both = ProbeEvidence(
        "http://x:1",
        {
            "/server_info": HttpAnswer(200, {"version": "0.6"}),
            "/version": HttpAnswer(200, {"version": "0.5"}),
            "/v1/models": HttpAnswer(200, {"data": [{"id": "m", "owned_by": "sglang"}]}),
        },
    )
    assert sglang.version(only_version) == "0.5"
    assert sglang.version(both) == "0.6"
    assert sglang.detect(both) and not get_adapter("vllm").detect(both)
    assert not get_adapter("openai").detect(both)


def test_a_kind_launch_fills_what_every_command_shares() -> None:
    named = LaunchOptions("vllm", "org/m", bind_host="0.0.0.0", served_model_name="m")
    command = build_launch(named)
    assert (command.engine, command.kind, command.label) == ("vllm", "vllm", "vLLM")
    assert (command.base_url, command.model_name) == ("http://127.0.0.1:8000", "m")
    launch = get_launch("vllm")
    assert launch is not None and command.source == launch.source
    # TGI takes no served name, and Ollama serves the name it pulls.
    assert build_launch(replace(named, engine="tgi")).model_name == "org/m"
    assert build_launch(LaunchOptions("ollama", "org/M-GGUF", gguf_quant="Q4_K_M")).model_name == (
        "hf.co/org/M-GGUF:Q4_K_M"
    )
