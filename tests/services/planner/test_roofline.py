"""Decode and prefill ceilings: the worked example, the crossover, and the properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.planner import PlanRequest, make_plan, measure
from services.planner.presets import GPUS, MODELS
from services.planner.roofline import batch_grid, linear_flops_per_token


def test_h100_decodes_unquantised_70b_at_about_24_tokens_per_second() -> None:
    plan = make_plan(PlanRequest("llama-3-70b", "h100-sxm", "bf16", batch=1, context=1))
    assert GPUS["h100-sxm"].bandwidth_bytes_s == 3.35e12
    assert round(plan.decode.bound_tok_s) == 24
    assert plan.decode.limited_by == "memory bandwidth"
    # With a full 8K context the KV read barely moves it
    full_context = make_plan(PlanRequest("llama-3-70b", "h100-sxm", "bf16", batch=1, context=8192))
    assert round(full_context.decode.bound_tok_s) == 24


def test_decode_bytes_are_weights_plus_kv_shared_across_the_batch() -> None:
    one = make_plan(PlanRequest("llama-3-8b", "h100-sxm", "bf16", batch=1, context=2048)).decode
    many = make_plan(PlanRequest("llama-3-8b", "h100-sxm", "bf16", batch=32, context=2048)).decode
    kv_per_sequence = 131_072 * 2048
    assert many.bytes_per_step_per_gpu - one.bytes_per_step_per_gpu == pytest.approx(
        31 * kv_per_sequence
    )


def test_crossover_batch_where_decode_turns_compute_bound() -> None:
    plan = make_plan(PlanRequest("llama-3-8b", "h100-sxm", "bf16", batch=1, context=1))
    crossover = plan.crossover_batch
    assert crossover is not None
    below = plan.roofline.decode(crossover - 1, 1)
    at = plan.roofline.decode(crossover, 1)
    assert below.limited_by == "memory bandwidth"
    assert at.limited_by == "compute"
    # The classic estimate: ridge point (FLOPs/byte) x bytes per weight / 2 FLOPs per weight, about 295
    assert 250 < crossover < 320


def test_long_context_decode_never_turns_compute_bound() -> None:
    plan = make_plan(PlanRequest("llama-3-70b", "h100-sxm", "bf16", batch=8, context=8192))
    assert plan.crossover_batch is None


def test_prefill_is_compute_bound_and_counts_2_flops_per_active_weight() -> None:
    plan = make_plan(PlanRequest("llama-3-8b", "h100-sxm", "bf16", batch=1, context=4096))
    assert plan.prefill.limited_by == "compute"
    linear = linear_flops_per_token(MODELS["llama-3-8b"])
    assert plan.prefill.flops_per_gpu > 4096 * linear  # plus attention
    assert plan.prefill.ttft_lower_bound_s == pytest.approx(plan.prefill.flops_per_gpu / 989.5e12)


def test_moe_decode_reads_only_active_experts_at_batch_1() -> None:
    plan = make_plan(PlanRequest("mixtral-8x22b", "h200", "bf16", batch=1, context=1))
    active_bytes = 2 * 39.16e9
    assert plan.decode.bytes_per_step_per_gpu == pytest.approx(active_bytes - 2 * 32768 * 6144, rel=0.01)
    wide = make_plan(PlanRequest("mixtral-8x22b", "h200", "bf16", batch=256, context=1))
    assert wide.decode.bytes_per_step_per_gpu == pytest.approx(2 * (140.63e9 - 32768 * 6144), rel=0.01)


def test_measured_fraction_of_the_bound() -> None:
    result = measure(12.0, model="llama-3-70b", gpu="h100-sxm", dtype="bf16", batch=1, context=1)
    assert result.bound_tok_s == pytest.approx(24.1, abs=0.05)
    assert result.fraction == pytest.approx(12.0 / result.bound_tok_s)


def test_measured_above_the_bound_warns() -> None:
    plan = make_plan(
        PlanRequest("llama-3-70b", "h100-sxm", "bf16", batch=1, context=1, achieved_tok_s=40)
    )
    assert any("above" in w for w in plan.warnings)


def test_fp8_on_a100_runs_at_bf16_speed_with_a_warning() -> None:
    plan = make_plan(PlanRequest("llama-3-8b", "a100-80gb", "fp8"))
    assert plan.roofline.peak_flops_per_gpu == 312e12
    assert any("no FP8" in w for w in plan.warnings)


def test_batch_grid_includes_marked_batches() -> None:
    grid = batch_grid(100, (37,))
    assert grid[0] == 1 and 37 in grid and grid[-1] >= 1024


@settings(max_examples=50, deadline=None)
@given(
    model=st.sampled_from(sorted(MODELS)),
    gpu=st.sampled_from(sorted(GPUS)),
    batch=st.integers(1, 1024),
    context=st.integers(1, 32768),
    tp=st.sampled_from([1, 2, 4]),
)
def test_bounds_are_monotonic(model: str, gpu: str, batch: int, context: int, tp: int) -> None:
    spec = MODELS[model]
    if spec.heads % tp or (spec.kv_heads % tp and tp % spec.kv_heads):
        return
    plan = make_plan(PlanRequest(model, gpu, "bf16", batch=batch, context=context, tp=tp))
    roofline = plan.roofline
    more_batch = roofline.decode(batch * 2, context)
    more_context = roofline.decode(batch, context * 2)
    assert more_batch.bound_tok_s >= plan.decode.bound_tok_s * (
        1 - 1e-9
    )  # more sequences, no less throughput
    assert more_batch.per_sequence_tok_s <= plan.decode.per_sequence_tok_s * (1 + 1e-9)
    assert more_context.bound_tok_s <= plan.decode.bound_tok_s * (1 + 1e-9)  # more KV to read, no faster
    assert plan.decode.bound_tok_s <= min(
        plan.decode.memory_bound_tok_s, plan.decode.compute_bound_tok_s
    ) * (1 + 1e-9)
