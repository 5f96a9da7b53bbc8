"""The engines side by side: a feature matrix where every cell names its source, and a
decision helper that ranks engines against the user's constraints and says why.

Both are data: the matrix is a table of cells, the helper a table of rules
(constraint value -> per-engine score and reason). Adding an engine or a rule means
adding rows, not branches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ENGINES: dict[str, str] = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "trtllm": "TensorRT-LLM",
    "llamacpp": "llama.cpp",
    "tgi": "TGI",
    "ollama": "Ollama",
}

FEATURES: list[str] = [
    "Paged KV cache",
    "Prefix caching",
    "Continuous batching",
    "Quantisation formats",
    "Structured output",
    "Speculative decoding",
    "Multi-GPU (TP/PP/EP)",
    "Hardware",
    "Prometheus metrics",
]


@dataclass(frozen=True)
class Cell:
    value: str
    source: str


VLLM_DOCS = "https://docs.vllm.ai/en/latest"
SGL_DOCS = "https://docs.sglang.io"
TRT_DOCS = "https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source"
LCPP = "https://github.com/ggml-org/llama.cpp/blob/master"
TGI_DOCS = "https://huggingface.co/docs/text-generation-inference"
OLLAMA = "https://github.com/ollama/ollama/blob/main"
TGI_REPO = "https://github.com/huggingface/text-generation-inference/blob/main"

MATRIX: dict[str, dict[str, Cell]] = {
    "vllm": {
        "Paged KV cache": Cell(
            "Yes: PagedAttention, blocks of 16 tokens by default (--block-size)",
            f"{VLLM_DOCS}/design/paged_attention.html",
        ),
        "Prefix caching": Cell(
            "Yes, on by default (V1): automatic, hash of each full block chained to its prefix",
            f"{VLLM_DOCS}/design/prefix_caching.html",
        ),
        "Continuous batching": Cell("Yes (token-level scheduler, chunked prefill)", f"{VLLM_DOCS}/"),
        "Quantisation formats": Cell(
            "FP8, INT8 W8A8, GPTQ, AWQ, Marlin, bitsandbytes, GGUF (experimental), "
            "compressed-tensors, NVFP4/MXFP4, FP8 KV cache",
            f"{VLLM_DOCS}/features/quantization/",
        ),
        "Structured output": Cell(
            "xgrammar, guidance (llguidance); outlines and lm-format-enforcer backends "
            "in vllm/v1/structured_output",
            f"{VLLM_DOCS}/features/structured_outputs/",
        ),
        "Speculative decoding": Cell(
            "EAGLE/EAGLE-3, MTP, draft model, n-gram, Medusa, suffix",
            f"{VLLM_DOCS}/features/spec_decode.html",
        ),
        "Multi-GPU (TP/PP/EP)": Cell(
            "TP, PP, DP, EP (--enable-expert-parallel), multi-node via Ray",
            f"{VLLM_DOCS}/serving/parallelism_scaling.html",
        ),
        "Hardware": Cell(
            "NVIDIA, AMD ROCm, Intel XPU/Gaudi, Google TPU, AWS Neuron, CPU (x86, Arm, POWER)",
            f"{VLLM_DOCS}/getting_started/installation/",
        ),
        "Prometheus metrics": Cell(
            "/metrics always on (vllm: prefix)",
            "vllm/entrypoints/serve/instrumentator/metrics.py (vLLM 0.33)",
        ),
    },
    "sglang": {
        "Paged KV cache": Cell(
            "Yes: token-granular pool (--page-size 1 by default)",
            f"{SGL_DOCS}/advanced_features/server_arguments.html",
        ),
        "Prefix caching": Cell(
            "Yes, on by default: RadixAttention, a radix tree over tokens with LRU eviction "
            "(--disable-radix-cache turns it off); HiCache adds host/storage tiers",
            "https://arxiv.org/abs/2312.07104",
        ),
        "Continuous batching": Cell(
            "Yes (overlap scheduler, chunked prefill)",
            f"{SGL_DOCS}/advanced_features/server_arguments.html",
        ),
        "Quantisation formats": Cell(
            "FP8, INT8 W8A8, AWQ, GPTQ, GGUF, bitsandbytes, ModelOpt FP4, MXFP4, torchao, FP8 KV cache",
            f"{SGL_DOCS}/advanced_features/quantization.html",
        ),
        "Structured output": Cell(
            "xgrammar (default), outlines, llguidance (--grammar-backend)",
            f"{SGL_DOCS}/advanced_features/structured_outputs.html",
        ),
        "Speculative decoding": Cell(
            "EAGLE-2, EAGLE-3, MTP, standalone draft model, n-gram (CUDA)",
            f"{SGL_DOCS}/docs/advanced_features/speculative_decoding",
        ),
        "Multi-GPU (TP/PP/EP)": Cell(
            "TP (--tp), PP (--pp-size), DP, EP (--ep-size), DP attention",
            f"{SGL_DOCS}/advanced_features/server_arguments.html",
        ),
        "Hardware": Cell(
            "NVIDIA, AMD, Intel Xeon CPU, Intel XPU, Ascend NPU, TPU",
            "https://github.com/sgl-project/sglang#readme",
        ),
        "Prometheus metrics": Cell(
            "/metrics only with --enable-metrics (sglang: prefix)",
            "python/sglang/srt/entrypoints/http_server.py (SGLang 0.5.23)",
        ),
    },
    "trtllm": {
        "Paged KV cache": Cell(
            "Yes: paged KV cache in blocks (tokens_per_block)", f"{TRT_DOCS}/features/kvcache.md"
        ),
        "Prefix caching": Cell(
            "Yes: KV cache block reuse (kv_cache_config.enable_block_reuse), with host offloading",
            f"{TRT_DOCS}/features/kvcache.md",
        ),
        "Continuous batching": Cell(
            "Yes: in-flight batching", f"{TRT_DOCS}/features/paged-attention-ifb-scheduler.md"
        ),
        "Quantisation formats": Cell(
            "FP8, NVFP4, INT8 SmoothQuant, INT4/INT8 weight-only, INT4 AWQ, GPTQ, "
            "W4A8, FP8/INT8 KV cache",
            f"{TRT_DOCS}/features/quantization.md",
        ),
        "Structured output": Cell(
            "xgrammar, llguidance (guided_decoding_backend)", f"{TRT_DOCS}/features/guided-decoding.md"
        ),
        "Speculative decoding": Cell(
            "EAGLE-3, MTP, Medusa, ReDrafter, draft-target, n-gram, lookahead",
            f"{TRT_DOCS}/features/speculative-decoding.md",
        ),
        "Multi-GPU (TP/PP/EP)": Cell(
            "TP (--tp_size), PP (--pp_size), EP (--ep_size), attention DP, context parallel",
            f"{TRT_DOCS}/features/parallel-strategy.md",
        ),
        "Hardware": Cell(
            "NVIDIA GPUs only (Ampere, Ada, Hopper, Blackwell)",
            f"{TRT_DOCS}/reference/support-matrix.md",
        ),
        "Prometheus metrics": Cell(
            "/prometheus/metrics only with return_perf_metrics: true in the YAML",
            "tensorrt_llm/serve/openai_server.py (mount_metrics)",
        ),
    },
    "llamacpp": {
        "Paged KV cache": Cell(
            "No pages: one KV buffer of -c token cells shared by the slots",
            f"{LCPP}/tools/server/README.md",
        ),
        "Prefix caching": Cell(
            "Per slot: reuses the longest common prefix of that slot's last prompt "
            "(cache_prompt, on by default); --cache-reuse shifts matching chunks; "
            "--cache-ram keeps prompts in host memory",
            f"{LCPP}/tools/server/README.md",
        ),
        "Continuous batching": Cell(
            "Yes, across -np parallel slots (-cb, on by default)", f"{LCPP}/tools/server/README.md"
        ),
        "Quantisation formats": Cell(
            "GGUF: Q2_K…Q8_0, K-quants, I-quants (IQ1–IQ4), F16/BF16; KV cache q8_0/q4_0 (-ctk/-ctv)",
            f"{LCPP}/tools/quantize/README.md",
        ),
        "Structured output": Cell(
            "GBNF grammars; JSON schema converted to GBNF; llguidance when built with it",
            f"{LCPP}/grammars/README.md",
        ),
        "Speculative decoding": Cell(
            "Draft model (-md), n-gram variants (--spec-type)",
            "https://github.com/ggml-org/llama.cpp/pull/10455",
        ),
        "Multi-GPU (TP/PP/EP)": Cell(
            "Layer split across GPUs (-sm layer, default) or row split (-sm row); "
            "RPC backend across hosts; no expert parallelism",
            f"{LCPP}/tools/server/README.md",
        ),
        "Hardware": Cell(
            "CPU (x86, Arm), Apple Metal, CUDA, ROCm/HIP, Vulkan, SYCL, MUSA, CANN, OpenCL",
            f"{LCPP}/README.md",
        ),
        "Prometheus metrics": Cell(
            "/metrics only with --metrics (llamacpp: prefix)",
            "tools/server/server-context.cpp (llama.cpp 0c1e57098)",
        ),
    },
    "tgi": {
        "Paged KV cache": Cell(
            "Yes: PagedAttention (flash-attention / flashinfer kernels)",
            f"{TGI_DOCS}/conceptual/paged_attention",
        ),
        "Prefix caching": Cell(
            "Yes in v3: prefix cache with a radix-trie allocator (on by default)",
            f"{TGI_REPO}/backends/v3/src/radix.rs",
        ),
        "Continuous batching": Cell("Yes", f"{TGI_DOCS}/index"),
        "Quantisation formats": Cell(
            "bitsandbytes, GPTQ, AWQ, Marlin, EETQ, FP8, EXL2, compressed-tensors",
            f"{TGI_DOCS}/conceptual/quantization",
        ),
        "Structured output": Cell(
            "Grammars via outlines: JSON schema and regex (TGI's own response_format shape)",
            f"{TGI_DOCS}/conceptual/guidance",
        ),
        "Speculative decoding": Cell(
            "Medusa, n-gram (--speculate), MLP speculators", f"{TGI_DOCS}/conceptual/speculation"
        ),
        "Multi-GPU (TP/PP/EP)": Cell(
            "TP only (--num-shard)", f"{TGI_DOCS}/conceptual/tensor_parallelism"
        ),
        "Hardware": Cell(
            "NVIDIA, AMD, Intel Gaudi, Intel GPU, AWS Inferentia, Google TPU (optimum-tpu); "
            "in maintenance mode",
            f"{TGI_DOCS}/supported_models",
        ),
        "Prometheus metrics": Cell(
            "/metrics always on (tgi_ prefix), also on --prometheus-port",
            "router/src/server.rs (TGI 3.3.6-dev0)",
        ),
    },
    "ollama": {
        "Paged KV cache": Cell(
            "No: runs llama.cpp-style per-model KV buffers", f"{OLLAMA}/llm/llama_server.go"
        ),
        "Prefix caching": Cell(
            "Per slot prompt reuse (from the llama.cpp runner)", f"{OLLAMA}/llm/llama_server.go"
        ),
        "Continuous batching": Cell(
            "Parallel slots per model (OLLAMA_NUM_PARALLEL)", f"{OLLAMA}/docs/faq.md"
        ),
        "Quantisation formats": Cell(
            "GGUF (Q4_0, Q4_K_M, Q8_0, F16, …); KV cache q8_0/q4_0 (OLLAMA_KV_CACHE_TYPE)",
            f"{OLLAMA}/docs/faq.md",
        ),
        "Structured output": Cell("JSON mode and JSON schema via `format`", f"{OLLAMA}/docs/api.md"),
        "Speculative decoding": Cell("No", f"{OLLAMA}/docs/faq.md"),
        "Multi-GPU (TP/PP/EP)": Cell(
            "Layer split across GPUs when a model does not fit one; no TP", f"{OLLAMA}/docs/faq.md"
        ),
        "Hardware": Cell("CPU, NVIDIA CUDA, AMD ROCm, Apple Metal", f"{OLLAMA}/docs/gpu.md"),
        "Prometheus metrics": Cell(
            "No: only /api/ps and per-response timings", f"{OLLAMA}/server/routes.go"
        ),
    },
}


def feature_rows() -> list[dict[str, str]]:
    """Long form: one row per engine x feature, with its source (for a table with links)."""
    return [
        {
            "engine": ENGINES[kind],
            "feature": feature,
            "value": cells[feature].value,
            "source": cells[feature].source,
        }
        for kind, cells in MATRIX.items()
        for feature in FEATURES
    ]


def feature_matrix() -> dict[str, dict[str, str]]:
    """Wide form: feature -> engine label -> value."""
    return {feature: {ENGINES[k]: MATRIX[k][feature].value for k in MATRIX} for feature in FEATURES}


# ---- decision helper -------------------------------------------------------------

Hardware = Literal["nvidia-datacenter", "nvidia-consumer", "amd", "apple", "cpu", "intel-gaudi"]
Traffic = Literal["single-user", "interactive", "high-throughput", "offline-batch"]
PrefixSharing = Literal["none", "some", "heavy"]
Operations = Literal["simplest", "standard", "max-performance"]
ModelFormat = Literal["hf", "gguf"]

HARDWARE_SUPPORT: dict[str, set[str]] = {
    "vllm": {"nvidia-datacenter", "nvidia-consumer", "amd", "cpu", "intel-gaudi"},
    "sglang": {"nvidia-datacenter", "nvidia-consumer", "amd", "cpu"},
    "trtllm": {"nvidia-datacenter", "nvidia-consumer"},
    "llamacpp": {"nvidia-datacenter", "nvidia-consumer", "amd", "apple", "cpu"},
    "tgi": {"nvidia-datacenter", "nvidia-consumer", "amd", "intel-gaudi"},
    "ollama": {"nvidia-datacenter", "nvidia-consumer", "amd", "apple", "cpu"},
}


@dataclass(frozen=True)
class Constraints:
    hardware: Hardware = "nvidia-datacenter"
    gpus: int = 1
    traffic: Traffic = "interactive"
    prefix_sharing: PrefixSharing = "some"
    structured_output: bool = False
    operations: Operations = "standard"
    model_format: ModelFormat = "hf"


@dataclass
class Ranking:
    kind: str
    label: str
    score: int
    supported: bool
    reasons: list[str] = field(default_factory=list)
    #: 1 for the best score; engines with equal scores share a place (None: not an option).
    place: int | None = None
    tied: bool = False

    @property
    def place_label(self) -> str:
        """ "1", "2 (tie)", or "—" for an engine that does not run on the hardware."""
        if self.place is None:
            return "—"
        return f"{self.place} (tie)" if self.tied else str(self.place)


Rule = dict[str, tuple[int, str]]

#: (constraint name, value) -> per-engine (score, why). Missing engines score 0.
RULES: dict[tuple[str, object], Rule] = {
    ("traffic", "single-user"): {
        "llamacpp": (3, "one stream at a time is where llama.cpp's low overhead shines"),
        "ollama": (3, "one command to pull and serve a model for one user"),
        "vllm": (1, "fine for one user, but its batching headroom goes unused"),
        "sglang": (1, "fine for one user, but its batching headroom goes unused"),
    },
    ("traffic", "interactive"): {
        "vllm": (2, "continuous batching with chunked prefill keeps latency steady under load"),
        "sglang": (2, "overlap scheduler keeps token latency low with many users"),
        "trtllm": (2, "in-flight batching with tuned NVIDIA kernels"),
        "tgi": (1, "continuous batching, but the project is in maintenance mode"),
        "llamacpp": (1, "a fixed number of slots (-np) caps concurrency"),
    },
    ("traffic", "high-throughput"): {
        "vllm": (3, "paged KV cache and large-batch scheduling for throughput"),
        "sglang": (3, "among the fastest open-source engines at high concurrency"),
        "trtllm": (3, "highest peak throughput on NVIDIA with FP8/FP4 kernels"),
        "tgi": (1, "serves batches, but lags the three above"),
        "llamacpp": (-2, "slot-based batching with one shared KV buffer does not scale to many users"),
        "ollama": (-3, "built for local use, not for high concurrency"),
    },
    ("traffic", "offline-batch"): {
        "vllm": (3, "offline LLM API and large batches"),
        "sglang": (3, "offline engine API and large batches"),
        "trtllm": (2, "fastest kernels, more setup per model"),
        "llamacpp": (-1, "limited batching"),
        "ollama": (-2, "not designed for bulk jobs"),
    },
    ("prefix_sharing", "some"): {
        "vllm": (1, "automatic prefix caching on by default"),
        "sglang": (1, "RadixAttention on by default"),
        "trtllm": (1, "KV block reuse"),
    },
    ("prefix_sharing", "heavy"): {
        "sglang": (
            3,
            "RadixAttention shares any common token prefix across requests (multi-turn, agents, few-shot)",
        ),
        "vllm": (2, "block-level automatic prefix caching (full blocks only)"),
        "trtllm": (2, "KV block reuse with host offload"),
        "tgi": (1, "prefix cache in v3"),
        "llamacpp": (0, "prefix reuse only within the same slot"),
        "ollama": (-1, "prefix reuse only within a slot, no control"),
    },
    ("structured_output", True): {
        "sglang": (2, "xgrammar by default, grammar work overlapped with decoding"),
        "vllm": (2, "xgrammar/guidance backends, OpenAI json_schema"),
        "trtllm": (1, "xgrammar/llguidance backends"),
        "llamacpp": (1, "GBNF grammars and JSON schema"),
        "tgi": (1, "JSON schema/regex, but its own response_format shape"),
        "ollama": (1, "JSON schema via `format`"),
    },
    ("operations", "simplest"): {
        "ollama": (3, "single binary, model library, no flags to tune"),
        "llamacpp": (2, "single binary and a GGUF file"),
        "vllm": (1, "pip install or one container, sensible defaults"),
        "trtllm": (-2, "NGC containers, YAML options and per-model tuning"),
    },
    ("operations", "max-performance"): {
        "trtllm": (3, "NVIDIA's tuned kernels, FP8/NVFP4, EP/attention-DP"),
        "sglang": (2, "many performance knobs (DP attention, EP, speculative decoding)"),
        "vllm": (2, "broad kernel and parallelism support"),
        "ollama": (-2, "few knobs to tune"),
    },
    ("model_format", "gguf"): {
        "llamacpp": (3, "GGUF is llama.cpp's native format"),
        "ollama": (3, "GGUF is Ollama's native format"),
        "vllm": (-1, "GGUF support is experimental; prefer the HF checkpoint"),
        "sglang": (-1, "GGUF loads, but HF checkpoints are the well-trodden path"),
        "trtllm": (-3, "no GGUF support"),
        "tgi": (-3, "no GGUF support"),
    },
    ("hardware", "apple"): {
        "llamacpp": (2, "Metal backend, the reference for Apple silicon"),
        "ollama": (2, "Metal via its llama.cpp runner"),
    },
    ("hardware", "cpu"): {
        "llamacpp": (2, "hand-tuned CPU kernels and low-bit GGUF"),
        "vllm": (0, "CPU backend exists (x86 AVX-512, Arm)"),
    },
}

MULTI_GPU: Rule = {
    "vllm": (2, "tensor parallelism across the GPUs"),
    "sglang": (2, "tensor and expert parallelism across the GPUs"),
    "trtllm": (2, "tensor, pipeline and expert parallelism"),
    "tgi": (1, "tensor parallel sharding"),
    "llamacpp": (
        -1,
        "splits layers across GPUs (no tensor parallelism): memory adds up, speed does not",
    ),
    "ollama": (-2, "splits layers only when a model does not fit one GPU"),
}
MAINTENANCE: Rule = {
    "tgi": (-1, "TGI is in maintenance mode (only fixes); pick an active engine for new work")
}


def rank_engines(constraints: Constraints) -> list[Ranking]:
    """Engines best-first for the constraints, each with the reasons behind its score."""
    rankings = {kind: Ranking(kind, label, 0, True) for kind, label in ENGINES.items()}
    for kind, ranking in rankings.items():
        if constraints.hardware not in HARDWARE_SUPPORT[kind]:
            ranking.supported = False
            ranking.reasons.append(f"does not run on {constraints.hardware.replace('-', ' ')}")
    applied: list[Rule] = [
        RULES.get((name, getattr(constraints, name)), {})
        for name in (
            "traffic",
            "prefix_sharing",
            "structured_output",
            "operations",
            "model_format",
            "hardware",
        )
    ]
    if constraints.gpus > 1:
        applied.append(MULTI_GPU)
    applied.append(MAINTENANCE)
    for rule in applied:
        for kind, (score, reason) in rule.items():
            ranking = rankings[kind]
            ranking.score += score
            if score:
                ranking.reasons.append(("+" if score > 0 else "−") + f"{abs(score)}: {reason}")
    ordered = sorted(rankings.values(), key=lambda r: (not r.supported, -r.score, r.label))
    _place(ordered)
    return ordered


def _place(ordered: list[Ranking]) -> None:
    """Competition places (1, 1, 1, 4): equal scores tie rather than being ranked by name."""
    supported = [r for r in ordered if r.supported]
    for ranking in supported:
        ranking.place = 1 + sum(r.score > ranking.score for r in supported)
        ranking.tied = sum(r.score == ranking.score for r in supported) > 1
