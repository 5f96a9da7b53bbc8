"""Launch commands for each engine, plain CLI and docker, with metrics always on.

Each kind's builder lives in its own package (`services/engines/<kind>/launch.py`, read through
`services.engines.launching`); this module checks the options and runs it. The commands bind to
`bind_host` (127.0.0.1 unless the user opens it up); inside a container the server listens on
0.0.0.0 and docker publishes the port on `bind_host`.

`options_for_plan` turns a plan into options (its model, tensor-parallel degree,
context length, memory fraction, batch as llama.cpp/Ollama slots, GGUF quantisation),
so the page and `shootout plan --engine` start what was planned.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from services.core.errors import ValidationError
from services.engines.launching import LaunchCommand, LaunchOptions, launches
from services.planner.catalog import get_model, get_weight_format

if TYPE_CHECKING:
    from services.engines.endpoints import EngineRecord
    from services.planner.plan import PlanRequest

__all__ = [
    "LaunchCommand",
    "LaunchOptions",
    "build_launch",
    "launch_engines",
    "options_for_plan",
    "register_launched_engine",
]


def launch_engines() -> dict[str, str]:
    """Kinds with a launch builder, and their labels."""
    return {kind: launch.label for kind, launch in launches().items()}


def build_launch(options: LaunchOptions) -> LaunchCommand:
    """The launch command for `options.engine`, after checking the options."""
    known = launches()
    launch = known.get(options.engine)
    if launch is None:
        raise ValidationError(f"No launch recipe for {options.engine!r}; known: {', '.join(known)}.")
    if not (options.model or "").strip():
        raise ValidationError("Give a model (a Hugging Face id, a local path or a GGUF file).")
    if not 1 <= options.gpus <= 1024:
        raise ValidationError("GPU count must be between 1 and 1,024.")
    if not 1 <= options.max_model_len <= 100_000_000:
        raise ValidationError("Maximum model length must be a positive number of tokens.")
    if not 0 < options.gpu_memory_utilization <= 1:
        raise ValidationError("GPU memory utilisation is a fraction in (0, 1].")
    if not 1 <= options.parallel_slots <= 4096:
        raise ValidationError("Parallel slots must be between 1 and 4,096.")
    port = options.port or launch.default_port
    if not 1 <= port <= 65535:
        raise ValidationError("The port must be between 1 and 65,535.")
    if any(c.isspace() for c in options.bind_host) or not options.bind_host:
        raise ValidationError("The bind host must be an address such as 127.0.0.1 or 0.0.0.0.")
    return launch.build(replace(options, model=options.model.strip(), port=port))


#: GGUF file-type names for the 16-bit formats (quantised ones are their own key, upper-cased).
_GGUF_16BIT = {"bf16": "BF16", "fp16": "F16"}


def options_for_plan(
    request: PlanRequest, engine: str = "vllm", *, model: str | None = None
) -> LaunchOptions:
    """The options that start what was planned: its model (the preset's Hugging Face id unless
    `model` is given), tensor-parallel degree, context length, memory fraction, the batch as
    llama.cpp/Ollama slots, and the GGUF quantisation of its weight format."""
    spec = get_model(request.model)
    fmt = get_weight_format(request.dtype or spec.native_dtype)
    quant = fmt.key.removeprefix("gguf-").upper() if fmt.family == "gguf" else _GGUF_16BIT.get(fmt.key)
    return LaunchOptions(
        engine=engine,
        model=(model or "").strip() or spec.hf_id or spec.key,
        gpus=request.tp,
        max_model_len=request.context,
        gpu_memory_utilization=request.mem_util,
        parallel_slots=min(max(request.batch, 1), 4096),
        gguf_quant=quant,
    )


def register_launched_engine(
    command: LaunchCommand, name: str, base_url: str | None = None
) -> EngineRecord:
    """Add the endpoint the command will serve to the engine registry (same kind and model)."""
    # CLI start: endpoints loads the database (SQLAlchemy, 0.2 s), which `shootout plan` otherwise
    # never needs.
    from services.engines import endpoints

    return endpoints.add_engine(
        name, base_url or command.base_url, kind=command.kind, model=command.model_name
    )
