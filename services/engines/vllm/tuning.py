"""vLLM's tunable settings, and what the local launcher passes on this machine."""

from __future__ import annotations

from services.engines.tuning import SWITCH, KindTuning, Setting, choice, decimal, integer

TUNING = KindTuning(
    "vllm",
    (
        Setting("max-num-seqs", "--max-num-seqs", integer(1, 4096), "sequences scheduled at once"),
        Setting(
            "max-num-batched-tokens",
            "--max-num-batched-tokens",
            integer(16, 1_048_576),
            "tokens per step",
        ),
        Setting(
            "block-size", "--block-size", choice("8", "16", "32", "64", "128"), "KV-cache block size"
        ),
        Setting(
            "prefix-caching",
            "--enable-prefix-caching",
            SWITCH,
            "automatic prefix caching",
            switch=True,
            off_flag="--no-enable-prefix-caching",
        ),
        Setting(
            "kv-cache-dtype",
            "--kv-cache-dtype",
            choice("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16"),
            "KV-cache data type",
        ),
        Setting(
            "gpu-memory-utilization",
            "--gpu-memory-utilization",
            decimal(0.05, 0.99),
            "GPU memory share",
        ),
        Setting(
            "kv-space-gb",
            "",
            integer(1, 1024),
            "KV-cache space on the CPU, GiB",
            env="VLLM_CPU_KVCACHE_SPACE",
        ),
        Setting("max-model-len", "--max-model-len", integer(64, 1_048_576), "longest sequence"),
    ),
    local_defaults={"max-model-len": "2048", "kv-space-gb": "1"},
    portable_command="vllm serve MODEL",
    # vLLM on a CPU reads its KV-cache space and threads from these.
    command_env=("VLLM_CPU",),
)
