"""KV-cache and weight memory: the issue's worked examples, exact, and the properties that must hold."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.core.errors import ValidationError
from services.planner import PlanRequest, make_plan, memory
from services.planner.presets import GPUS, KV_FORMATS, MODELS, WEIGHT_FORMATS
from services.planner.specs import GB, GIB

LLAMA_70B = MODELS["llama-3-70b"]
BF16 = KV_FORMATS["bf16"]
FP32 = KV_FORMATS["fp32"]


def test_llama_70b_kv_bytes_per_token_bf16() -> None:
    # 2 (K and V) x 80 layers x 8 KV heads x 128 head dim x 2 bytes
    assert memory.kv_bytes_per_token(LLAMA_70B, BF16) == 2 * 80 * 8 * 128 * 2 == 327_680


def test_issue_worked_example_655360_is_the_fp32_cache() -> None:
    """The issue quotes 655,360 B/token "in BF16" and 343.6 GB = 320 GiB for 64 x 8,192 tokens.

    With Llama 3 70B's published config (80 layers, 8 KV heads of 128) that is the cache
    at 4 bytes per element; at BF16's 2 bytes every figure halves (327,680 B; 171.8 GB = 160 GiB).
    """
    per_token = memory.kv_bytes_per_token(LLAMA_70B, FP32)
    assert per_token == 655_360
    total = 64 * memory.kv_bytes_per_sequence(LLAMA_70B, FP32, 8192, block_size=16)
    assert total == 64 * 8192 * 655_360 == 343_597_383_680
    assert round(total / GB, 1) == 343.6
    assert total / GIB == 320


def test_llama_70b_64_by_8192_in_bf16() -> None:
    plan = make_plan(PlanRequest("llama-3-70b", "h100-sxm", "bf16", batch=64, context=8192))
    assert plan.kv_bytes_per_token == 327_680
    assert plan.kv_total_bytes == 64 * 8192 * 327_680
    assert round(plan.kv_total_bytes / GB, 1) == 171.8
    assert plan.kv_total_bytes / GIB == 160
    assert not plan.fit.fits  # 141 GB of weights alone overflow one 80 GB H100


def test_weights_by_dtype() -> None:
    params = memory.parameter_breakdown(LLAMA_70B).total
    assert params == 70_553_706_496
    assert memory.weight_bytes(LLAMA_70B, WEIGHT_FORMATS["bf16"]).total == params * 2
    fp8 = memory.weight_bytes(LLAMA_70B, WEIGHT_FORMATS["fp8"])
    embeddings = 2 * 128256 * 8192  # input table and untied output head stay BF16
    assert (
        fp8.total
        == (params - embeddings - fp8_norms(LLAMA_70B)) * 1 + (embeddings + fp8_norms(LLAMA_70B)) * 2
    )
    q4 = memory.weight_bytes(LLAMA_70B, WEIGHT_FORMATS["gguf-q4_k_m"])
    assert q4.total == pytest.approx(params * 4.8944 / 8)
    awq = memory.weight_bytes(LLAMA_70B, WEIGHT_FORMATS["int4-awq"])
    sixteen_bit = embeddings + fp8_norms(LLAMA_70B)
    assert awq.total == pytest.approx((params - sixteen_bit) * (4 + 20 / 128) / 8 + sixteen_bit * 2)
    assert 4.4 < awq.bits_per_weight < 4.6  # 4-bit + group scales, with 16-bit embeddings and head


def fp8_norms(model) -> int:  # type: ignore[no-untyped-def]
    return memory.parameter_breakdown(model).norms


def test_gguf_formats_use_real_bits_per_weight() -> None:
    # Whole-file averages from llama.cpp's quantize README (Llama 3.1 8B), block sizes from gguf.
    expected = {
        "gguf-q8_0": (8.5008, 8.5),
        "gguf-q6_k": (6.5633, 6.5625),
        "gguf-q5_k_m": (5.7036, 5.5),
        "gguf-q4_k_m": (4.8944, 4.5),
        "gguf-iq4_xs": (4.4597, 4.25),
    }
    for key, (average, block) in expected.items():
        fmt = WEIGHT_FORMATS[key]
        assert fmt.bits_per_weight == average
        assert fmt.block_bits_per_weight == block


def test_deepseek_v3_mla_caches_the_latent_not_heads() -> None:
    model = MODELS["deepseek-v3"]
    # (kv_lora_rank 512 + RoPE key 64) x 61 layers x 2 bytes, no separate V
    assert memory.kv_bytes_per_token(model, BF16) == (512 + 64) * 61 * 2 == 70_272
    # MLA latents are whole on every tensor-parallel rank
    assert memory.kv_bytes_per_token_per_gpu(model, BF16, 8) == 70_272


def test_sliding_window_layers_cap_their_cache() -> None:
    mistral = replace(MODELS["llama-3-8b"], sliding_window=4096, sliding_window_layers=32)
    short = memory.kv_bytes_per_sequence(mistral, BF16, 1000)
    assert short == 1000 * memory.kv_bytes_per_token(mistral, BF16)
    long = memory.kv_bytes_per_sequence(mistral, BF16, 32768)
    assert long == 4096 * memory.kv_bytes_per_token(mistral, BF16)
    half = replace(mistral, sliding_window_layers=16)
    per_layer = memory.kv_bytes_per_token(mistral, BF16) / 32
    assert (
        memory.kv_bytes_per_sequence(half, BF16, 32768) == 16 * per_layer * 32768 + 16 * per_layer * 4096
    )


def test_blocks_round_sequences_up() -> None:
    per_token = memory.kv_bytes_per_token(LLAMA_70B, BF16)
    assert memory.kv_bytes_per_sequence(LLAMA_70B, BF16, 17, block_size=16) == 32 * per_token
    plan = make_plan(PlanRequest("llama-3-8b", "h100-sxm", "bf16", batch=1, context=1000, block_size=16))
    assert plan.fit.blocks_per_sequence == 63


def test_max_sequences_and_blocks_are_consistent() -> None:
    plan = make_plan(PlanRequest("llama-3-8b", "h100-sxm", "bf16", batch=1, context=8192, mem_util=0.9))
    fit = plan.fit
    usable = GPUS["h100-sxm"].memory_bytes * 0.9
    assert fit.kv_capacity_per_gpu == pytest.approx(usable - plan.weights.total)
    assert fit.max_sequences == int(fit.kv_capacity_per_gpu // plan.kv_bytes_per_sequence)
    assert fit.blocks_per_gpu // fit.blocks_per_sequence == fit.max_sequences
    assert fit.max_context_at_batch >= 8192 * fit.max_sequences  # one sequence could take it all


def test_mixtral_moe_active_and_total() -> None:
    params = memory.parameter_breakdown(MODELS["mixtral-8x22b"])
    assert params.total == pytest.approx(141e9, rel=0.01)
    assert params.active == pytest.approx(39e9, rel=0.01)


def test_expected_experts_touched() -> None:
    mixtral = MODELS["mixtral-8x22b"]
    assert memory.expected_experts_touched(mixtral, 1) == pytest.approx(2)
    assert memory.expected_experts_touched(mixtral, 1000) == pytest.approx(8)


def test_tp_must_split_heads_evenly() -> None:
    with pytest.raises(ValidationError, match="does not divide the 64 attention heads"):
        make_plan(PlanRequest("llama-3-70b", "h100-sxm", tp=3))


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_tp_divides_memory(tp: int) -> None:
    one = make_plan(PlanRequest("llama-3-70b", "h100-sxm", "bf16", batch=8, context=4096, tp=1))
    many = make_plan(PlanRequest("llama-3-70b", "h100-sxm", "bf16", batch=8, context=4096, tp=tp))
    assert many.fit.weights_per_gpu * tp == pytest.approx(one.fit.weights_per_gpu)
    assert many.fit.kv_per_gpu * tp == pytest.approx(one.fit.kv_per_gpu)  # 8 KV heads split evenly


def test_tp_beyond_kv_heads_replicates_them() -> None:
    plan = make_plan(PlanRequest("llama-3-405b", "h100-sxm", "bf16", batch=1, context=1024, tp=16))
    # 8 KV heads on 16 GPUs: each GPU keeps one head, so the cache per GPU is 1/8, not 1/16
    assert plan.kv_bytes_per_token_per_gpu == plan.kv_bytes_per_token / 8


models = st.sampled_from(sorted(MODELS))
gpus = st.sampled_from(sorted(GPUS))


@settings(max_examples=60, deadline=None)
@given(
    model=models,
    gpu=gpus,
    batch=st.integers(1, 512),
    context=st.integers(1, 65536),
    more_batch=st.integers(1, 512),
    more_context=st.integers(1, 65536),
)
def test_memory_is_monotonic_in_batch_and_context(
    model: str, gpu: str, batch: int, context: int, more_batch: int, more_context: int
) -> None:
    base = make_plan(PlanRequest(model, gpu, "bf16", batch=batch, context=context))
    bigger = make_plan(
        PlanRequest(model, gpu, "bf16", batch=batch + more_batch, context=context + more_context)
    )
    assert bigger.kv_total_bytes > base.kv_total_bytes
    assert bigger.fit.needed_per_gpu > base.fit.needed_per_gpu
    assert bigger.fit.max_sequences <= base.fit.max_sequences
    assert base.kv_total_bytes == batch * base.kv_bytes_per_sequence


@settings(max_examples=40, deadline=None)
@given(model=models, context=st.integers(1, 131072))
def test_kv_per_sequence_grows_with_context(model: str, context: int) -> None:
    spec = MODELS[model]
    assert memory.kv_bytes_per_sequence(spec, BF16, context + 1) >= memory.kv_bytes_per_sequence(
        spec, BF16, context
    )
