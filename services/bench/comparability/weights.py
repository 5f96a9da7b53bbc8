"""What an engine serves and which of its settings explain speed, for Compare's settings diff
(issue 47: Compare listed 12 differing settings alphabetically and never said Q4_1 vs BF16).

`weights_of` reads the model's format and dtype from what the engine reported of itself
(llama.cpp's `/props` model_ftype and path, SGLang's `/server_info` dtype and quantization, TGI's
`/info`) and from a local engine's registry entry (its `--dtype`); `speed_rank` orders setting
names so that the ones that explain a speed difference (weights, batch width, prefix cache,
chunked prefill, attention backend, context) come first.
"""

from __future__ import annotations

from typing import Any

from services.core import stored_json
from services.runstate.stored import StoredEngine

#: The rows Compare adds at the top of the engines' settings.
FORMAT = "model format"
DTYPE = "model dtype"

_DTYPE_NAMES = {
    "bfloat16": "BF16",
    "bf16": "BF16",
    "float16": "FP16",
    "fp16": "FP16",
    "half": "FP16",
    "float32": "FP32",
    "fp32": "FP32",
    "float": "FP32",
}

#: Kinds that load Hugging Face weights unless a path says GGUF.
_HF_KINDS = ("vllm", "sglang", "tgi")

#: Setting-name fragments, most telling first: a setting whose name holds one of these is
#: shown (and named in a comparability line) before the rest.
_SPEED_FRAGMENTS = (
    FORMAT,
    DTYPE,
    "ftype",
    "quantiz",
    "dtype",
    "total_slots",
    "max_running_requests",
    "max_num_seqs",
    "max_concurrent",
    "max_batch",
    "prefix_caching",
    "cache_prompt",
    "radix_cache",
    "chunked_prefill",
    "max_num_batched_tokens",
    "max_prefill_tokens",
    "attention_backend",
    "speculative",
    "tp_size",
    "tensor_parallel",
    "n_threads",
    "n_ctx",
    "context_length",
    "max_model_len",
    "block_size",
    "max_total_tokens",
)


def dtype_name(value: Any) -> str | None:
    """ "BF16" for "bfloat16" and the like; other names as given (upper case)."""
    text = str(value or "").strip()
    if not text or text.lower() in ("none", "null", "auto"):
        return None
    return _DTYPE_NAMES.get(text.lower(), text.upper())


def weights_of(snapshot: StoredEngine) -> dict[str, str]:
    """{FORMAT: "GGUF", DTYPE: "Q4_1"} from an engine snapshot (Run.engines' entry): what is
    known of the two, nothing for what the engine did not say."""
    reported = stored_json.mapping(snapshot.get("reported"))
    info = stored_json.mapping(snapshot.get("info"))
    props = stored_json.mapping(reported.get("/props"))
    server = stored_json.mapping(reported.get("/server_info"))
    tgi = stored_json.mapping(reported.get("/info"))
    path = str(props.get("model_path") or server.get("model_path") or tgi.get("model_id") or "")
    model = str(snapshot.get("model") or "")
    out: dict[str, str] = {}
    if props.get("model_ftype") or path.lower().endswith(".gguf") or model.lower().endswith(".gguf"):
        out[FORMAT] = "GGUF"
    elif server.get("load_format") or path or snapshot.get("kind") in _HF_KINDS:
        out[FORMAT] = "Hugging Face"
    quantised = server.get("quantization") or tgi.get("quantize")
    dtype = (
        props.get("model_ftype")
        or (quantised if dtype_name(quantised) else None)
        or server.get("dtype")
        or tgi.get("dtype")
        or info.get("dtype")
    )
    if name := dtype_name(dtype):
        out[DTYPE] = name
    return out


def speed_rank(key: str) -> int:
    """Where a setting goes in the diff: its fragment's place in `_SPEED_FRAGMENTS`, or after all."""
    name = key.lower()
    for rank, fragment in enumerate(_SPEED_FRAGMENTS):
        if fragment in name:
            return rank
    return len(_SPEED_FRAGMENTS)
