"""llama.cpp beside the other engines: its features (each with a source), the hardware it runs
on, and its score under each of the Planner's constraints."""

from __future__ import annotations

from services.engines.reference import Cell, KindReference

REPO = "https://github.com/ggml-org/llama.cpp/blob/master"

REFERENCE = KindReference(
    "llamacpp",
    cells={
        "Paged KV cache": Cell(
            "No pages: one KV buffer of -c token cells shared by the slots",
            f"{REPO}/tools/server/README.md",
        ),
        "Prefix caching": Cell(
            "Per slot: reuses the longest common prefix of that slot's last prompt (cache_prompt, on by default); --cache-reuse shifts matching chunks; --cache-ram keeps prompts in host memory",
            f"{REPO}/tools/server/README.md",
        ),
        "Continuous batching": Cell(
            "Yes, across -np parallel slots (-cb, on by default)", f"{REPO}/tools/server/README.md"
        ),
        "Quantisation formats": Cell(
            "GGUF: Q2_K…Q8_0, K-quants, I-quants (IQ1–IQ4), F16/BF16; KV cache q8_0/q4_0 (-ctk/-ctv)",
            f"{REPO}/tools/quantize/README.md",
        ),
        "Structured output": Cell(
            "GBNF grammars; JSON schema converted to GBNF; llguidance when built with it",
            f"{REPO}/grammars/README.md",
        ),
        "Speculative decoding": Cell(
            "Draft model (-md), n-gram variants (--spec-type)",
            "https://github.com/ggml-org/llama.cpp/pull/10455",
        ),
        "Multi-GPU (TP/PP/EP)": Cell(
            "Layer split across GPUs (-sm layer, default) or row split (-sm row); RPC backend across hosts; no expert parallelism",
            f"{REPO}/tools/server/README.md",
        ),
        "Hardware": Cell(
            "CPU (x86, Arm), Apple Metal, CUDA, ROCm/HIP, Vulkan, SYCL, MUSA, CANN, OpenCL",
            f"{REPO}/README.md",
        ),
        "Prometheus metrics": Cell(
            "/metrics only with --metrics (llamacpp: prefix)",
            "tools/server/server-context.cpp (llama.cpp 0c1e57098)",
        ),
    },
    hardware=frozenset({"amd", "apple", "cpu", "nvidia-consumer", "nvidia-datacenter"}),
    scores={
        ("traffic", "single-user"): (3, "one stream at a time is where llama.cpp's low overhead shines"),
        ("traffic", "interactive"): (1, "a fixed number of slots (-np) caps concurrency"),
        ("traffic", "high-throughput"): (
            -2,
            "slot-based batching with one shared KV buffer does not scale to many users",
        ),
        ("traffic", "offline-batch"): (-1, "limited batching"),
        ("prefix_sharing", "heavy"): (0, "prefix reuse only within the same slot"),
        ("structured_output", True): (1, "GBNF grammars and JSON schema"),
        ("operations", "simplest"): (2, "single binary and a GGUF file"),
        ("model_format", "gguf"): (3, "GGUF is llama.cpp's native format"),
        ("hardware", "apple"): (2, "Metal backend, the reference for Apple silicon"),
        ("hardware", "cpu"): (2, "hand-tuned CPU kernels and low-bit GGUF"),
        ("gpus", "several"): (
            -1,
            "splits layers across GPUs (no tensor parallelism): memory adds up, speed does not",
        ),
    },
)
