"""TensorRT-LLM's tunable settings (`trtllm-serve` flags); it runs through command templates only."""

from __future__ import annotations

from services.engines.tuning import KindTuning, Setting, decimal, integer

TUNING = KindTuning(
    "trtllm",
    (
        Setting("max_batch_size", "--max_batch_size", integer(1, 4096), "largest batch"),
        Setting("max_num_tokens", "--max_num_tokens", integer(16, 1_048_576), "tokens per iteration"),
        Setting(
            "kv_cache_free_gpu_memory_fraction",
            "--kv_cache_free_gpu_memory_fraction",
            decimal(0.05, 0.99),
            "free GPU memory share for the KV cache",
        ),
    ),
    portable_command="trtllm-serve MODEL",
)
