"""Which stored runs measured the planned model on the planned GPU (names as engines and drivers give them)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.planner.matching import gpu_name_matches, model_matches, model_tokens, resolve_model
from services.planner.presets import GPUS, MODELS


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("smollm2", "smollm2-135m"),  # the local vLLM's served name: the only SmolLM2 in the catalog
        ("SmolLM2-135M-Instruct", "smollm2-135m"),
        ("HuggingFaceTB/SmolLM2-135M-Instruct", "smollm2-135m"),
        ("SMOLLM2-135M-INSTRUCT", "smollm2-135m"),
        ("llama3.1:8b", "llama-3-8b"),  # an Ollama tag
        ("meta-llama/Llama-3.1-70B-Instruct", "llama-3-70b"),
        ("/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "llama-3-8b"),
        ("bartowski/Meta-Llama-3.1-70B-Instruct-GGUF:Q4_K_M", "llama-3-70b"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),  # not also the 72B, whose tokens start alike
        ("qwen2.5:72b", "qwen2.5-72b"),
    ],
)
def test_run_model_names_resolve_to_one_preset(name: str, key: str) -> None:
    assert resolve_model(name, MODELS) == {key}
    assert model_matches([name], MODELS[key], MODELS)


def test_a_small_model_never_matches_a_large_one() -> None:
    for name in ("smollm2", "SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"):
        assert not model_matches([name], MODELS["llama-3-70b"], MODELS)
    assert not model_matches(["Llama-3.1-8B-Instruct"], MODELS["llama-3-70b"], MODELS)


def test_ambiguous_or_empty_names_match_nothing() -> None:
    assert resolve_model("llama3.1", MODELS) == {"llama-3-8b", "llama-3-70b", "llama-3-405b"}
    assert not model_matches(["llama3.1"], MODELS["llama-3-70b"], MODELS)
    assert not model_matches(["", "model", "gpt-4o"], MODELS["llama-3-8b"], MODELS)
    assert model_tokens("Meta-Llama-3.1-8B-Instruct") == ("llama", "3", "1", "8", "b")


def test_a_served_name_stops_matching_when_the_catalog_holds_two_sizes() -> None:
    models = {
        **MODELS,
        "smollm2-360m": replace(
            MODELS["smollm2-135m"],
            key="smollm2-360m",
            name="SmolLM2 360M",
            hf_id="HuggingFaceTB/SmolLM2-360M-Instruct",
            hidden=960,
        ),
    }
    assert not model_matches(["smollm2"], models["smollm2-135m"], models)
    assert model_matches(["SmolLM2-135M-Instruct"], models["smollm2-135m"], models)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # what nvidia-smi calls the SXM part
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA H200", "h200"),
        ("Apple M4 Max", "apple-m4-max"),
        ("h100-sxm", "h100-sxm"),
    ],
)
def test_driver_gpu_names_match_exactly_one_preset(name: str, key: str) -> None:
    assert [k for k, gpu in GPUS.items() if gpu_name_matches(name, gpu)] == [key]


@pytest.mark.parametrize(
    "name", ["cpu", "", "NVIDIA L40", "NVIDIA H100 NVL", "AMD EPYC 7763 64-Core Processor"]
)
def test_other_hardware_is_not_the_h100(name: str) -> None:
    assert not gpu_name_matches(name, GPUS["h100-sxm"])
