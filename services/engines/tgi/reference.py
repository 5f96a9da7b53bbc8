"""TGI beside the other engines: its features (each with a source), the hardware it runs
on, and its score under each of the Planner's constraints."""

from __future__ import annotations

from services.engines.reference import Cell, KindReference

DOCS = "https://huggingface.co/docs/text-generation-inference"
REPO = "https://github.com/huggingface/text-generation-inference/blob/main"

REFERENCE = KindReference(
    "tgi",
    cells={
        "Paged KV cache": Cell(
            "Yes: PagedAttention (flash-attention / flashinfer kernels)",
            f"{DOCS}/conceptual/paged_attention",
        ),
        "Prefix caching": Cell(
            "Yes in v3: prefix cache with a radix-trie allocator (on by default)",
            f"{REPO}/backends/v3/src/radix.rs",
        ),
        "Continuous batching": Cell("Yes", f"{DOCS}/index"),
        "Quantisation formats": Cell(
            "bitsandbytes, GPTQ, AWQ, Marlin, EETQ, FP8, EXL2, compressed-tensors",
            f"{DOCS}/conceptual/quantization",
        ),
        "Structured output": Cell(
            "Grammars via outlines: JSON schema and regex (TGI's own response_format shape)",
            f"{DOCS}/conceptual/guidance",
        ),
        "Speculative decoding": Cell(
            "Medusa, n-gram (--speculate), MLP speculators", f"{DOCS}/conceptual/speculation"
        ),
        "Multi-GPU (TP/PP/EP)": Cell("TP only (--num-shard)", f"{DOCS}/conceptual/tensor_parallelism"),
        "Hardware": Cell(
            "NVIDIA, AMD, Intel Gaudi, Intel GPU, AWS Inferentia, Google TPU (optimum-tpu); in maintenance mode",
            f"{DOCS}/supported_models",
        ),
        "Prometheus metrics": Cell(
            "/metrics always on (tgi_ prefix), also on --prometheus-port",
            "router/src/server.rs (TGI 3.3.6-dev0)",
        ),
    },
    hardware=frozenset({"amd", "intel-gaudi", "nvidia-consumer", "nvidia-datacenter"}),
    scores={
        ("traffic", "interactive"): (1, "continuous batching, but the project is in maintenance mode"),
        ("traffic", "high-throughput"): (1, "serves batches, but lags the three above"),
        ("prefix_sharing", "heavy"): (1, "prefix cache in v3"),
        ("structured_output", True): (1, "JSON schema/regex, but its own response_format shape"),
        ("model_format", "gguf"): (-3, "no GGUF support"),
        ("gpus", "several"): (1, "tensor parallel sharding"),
        ("maintenance", True): (
            -1,
            "TGI is in maintenance mode (only fixes); pick an active engine for new work",
        ),
    },
)
