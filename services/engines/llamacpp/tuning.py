"""llama.cpp's tunable settings, and what the local launcher passes on this machine."""

from __future__ import annotations

from services import local_engines
from services.engines.tuning import SWITCH, KindTuning, Setting, choice, integer

_KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")


def _docker_model() -> tuple[str | None, str]:
    """The GGUF this machine serves, its folder mounted at /models (placeholders without one)."""
    found = local_engines.gguf_path()
    if found is None:
        return "/path/to/models", "/models/model.gguf"
    return str(found.parent), f"/models/{found.name}"


TUNING = KindTuning(
    "llamacpp",
    (
        Setting("np", "-np", integer(1, 256), "parallel slots (continuous batching)"),
        Setting("c", "-c", integer(256, 1_048_576), "context size in tokens, shared by the slots"),
        Setting("t", "-t", integer(1, 512), "threads for generation"),
        Setting("tb", "-tb", integer(1, 512), "threads for prompt processing"),
        Setting("b", "-b", integer(1, 65_536), "logical batch size"),
        Setting("ub", "-ub", integer(1, 65_536), "physical batch size"),
        Setting("ctk", "-ctk", choice(*_KV_TYPES), "KV cache type for K"),
        Setting("ctv", "-ctv", choice(*_KV_TYPES), "KV cache type for V"),
        Setting(
            "cache-reuse", "--cache-reuse", integer(0, 65_536), "minimum chunk reused by KV shifting"
        ),
        Setting("fa", "-fa", choice("on", "off", "auto"), "flash attention"),
        Setting("cache-prompt", "", SWITCH, "prompt cache", switch=True, off_flag="--no-cache-prompt"),
    ),
    # One thread each, as the shared local engines run (llamacpp/local.py's LLAMACPP_THREADS says why).
    local_defaults={"t": "1", "tb": "1", "c": "4096"},
    portable_command="llama-server",
    docker_model=_docker_model,
)
