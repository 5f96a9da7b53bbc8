"""Is a stored run comparable with a plan? Same model and same hardware, by name.

Runs name their model the way the engine served it ("smollm2", "SmolLM2-135M-Instruct",
"HuggingFaceTB/SmolLM2-135M-Instruct", "llama3.1:8b", "/models/x-Q4_K_M.gguf") and their
GPU the way the driver reports it ("NVIDIA H100 80GB HBM3"), or not at all. Setting a
CPU run of a 135M model against the bound of a 70B model on an H100 yields a meaningless
percentage, so a run counts only when both sides match; anything unknown does not match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from services.planner.specs import GpuSpec, ModelSpec

# Words that say how a checkpoint was tuned or packaged, not which model it is.
_MODEL_NOISE = frozenset({"instruct", "chat", "it", "hf", "gguf", "meta", "base", "model"})


def model_tokens(name: str) -> tuple[str, ...]:
    """ "HuggingFaceTB/SmolLM2-135M-Instruct" -> ("smollm", "2", "135", "m").

    Letters and digits split apart, so "llama3.1:8b" and "Llama-3.1-8B" give the same
    tokens; the organisation, directories and ".gguf" are dropped.
    """
    text = (name or "").strip().lower().replace("\\", "/").rsplit("/", 1)[-1]
    text = text.removesuffix(".gguf")
    return tuple(t for t in re.findall(r"[a-z]+|\d+", text) if t not in _MODEL_NOISE)


def _names(model: ModelSpec) -> set[tuple[str, ...]]:
    names = {model_tokens(model.key), model_tokens(model.name)}
    if model.hf_id:
        names.add(model_tokens(model.hf_id))
    return {n for n in names if n}


def _prefix(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    return len(short) < len(long) and long[: len(short)] == short


def resolve_model(name: str, models: Mapping[str, ModelSpec]) -> set[str]:
    """The catalog keys a run's model name can mean.

    An exact match wins. Otherwise one name may extend the other: "smollm2" (a served
    name without the size) or "Llama-3.1-8B-Instruct-Q4_K_M" (a quantised file). Several
    keys back means the name is ambiguous ("llama3.1" could be 8B, 70B or 405B).
    """
    tokens = model_tokens(name)
    if not tokens:
        return set()
    exact = {key for key, model in models.items() if tokens in _names(model)}
    if exact:
        return exact
    return {
        key
        for key, model in models.items()
        if any(_prefix(tokens, n) or _prefix(n, tokens) for n in _names(model))
    }


def _shape(model: ModelSpec) -> tuple[int, ...]:
    """What the roofline depends on: two keys with the same shape are the same model to it."""
    return (
        model.layers,
        model.hidden,
        model.heads,
        model.kv_heads,
        model.head_dim,
        model.intermediate,
        model.vocab,
        model.experts,
        model.experts_per_token,
        model.kv_lora_rank,
    )


def model_matches(names: Iterable[str], model: ModelSpec, models: Mapping[str, ModelSpec]) -> bool:
    """True when one of the run's model names means the planned model and nothing else."""
    for name in names:
        keys = resolve_model(name, models)
        if model.key in keys and all(_shape(models[k]) == _shape(model) for k in keys if k in models):
            return True
    return False


# ---- hardware ----------------------------------------------------------------------

_GPU_NOISE = frozenset(
    {
        "nvidia",
        "geforce",
        "amd",
        "radeon",
        "apple",
        "tesla",
        "intel",
        "gpu",
        "graphics",
        "hgx",
        "dgx",
        "rtx",
        "gb",
    }
)
_CHIP_SUFFIX = frozenset({"ti", "super", "max", "pro", "ultra"})
_MEMORY = re.compile(r"^(\d+)gb?$")


@dataclass(frozen=True)
class _GpuName:
    chip: str | None  # "h100", "a100", "4090", "m4 max"
    memory_gb: str | None  # "80" when the name states it
    forms: frozenset[str]  # "sxm", "pcie", "nvl" when the name states them
    rest: tuple[str, ...]  # every other word, for names without a chip number


def _form(token: str) -> str | None:
    # nvidia-smi calls an H100 SXM "NVIDIA H100 80GB HBM3" and the PCIe card "NVIDIA H100 PCIe".
    if re.fullmatch(r"sxm\d*|hbm3e?", token):
        return "sxm"
    if token in ("pcie", "nvl"):
        return token
    return None


def _gpu_name(name: str) -> _GpuName:
    tokens = [t for t in re.split(r"[^a-z0-9]+", (name or "").lower()) if t and t not in _GPU_NOISE]
    chip = memory = None
    forms: set[str] = set()
    rest: list[str] = []
    for index, token in enumerate(tokens):
        if (size := _MEMORY.match(token)) and memory is None:
            memory = size.group(1)
        elif form := _form(token):
            forms.add(form)
        elif chip is None and re.search(r"\d", token):
            following = tokens[index + 1] if index + 1 < len(tokens) else ""
            chip = f"{token} {following}" if following in _CHIP_SUFFIX else token
        elif not (chip and chip.endswith(" " + token)):
            rest.append(token)
    return _GpuName(chip, memory, frozenset(forms), tuple(rest))


def gpu_name_matches(name: str, gpu: GpuSpec) -> bool:
    """True when a recorded device name is the planned GPU: same chip, and the same memory
    size and form factor wherever both names state them (an A100 40GB is not an 80GB)."""
    if not (name or "").strip():
        return False
    if name.strip().lower() == gpu.key:
        return True
    run, plan = _gpu_name(name), _gpu_name(gpu.name)
    if run.chip is None or plan.chip is None:
        return bool(run.rest) and (run.chip, run.rest) == (plan.chip, plan.rest)
    if run.chip != plan.chip:
        return False
    if run.memory_gb and plan.memory_gb and run.memory_gb != plan.memory_gb:
        return False
    return not (run.forms and plan.forms and not run.forms & plan.forms)


def gpu_matches(names: Iterable[str], gpu: GpuSpec) -> bool:
    return any(gpu_name_matches(name, gpu) for name in names)
