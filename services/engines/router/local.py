"""SGLang's router as a local engine: PyPI's `smg` (a prebuilt Rust binary, no GPU libraries) in
its own environment, fronting the chosen local chat servers: the two llama.cpp servers, and the
SGLang server when that backend is chosen. It starts last (`start_order`): its workers run first."""

from __future__ import annotations

import subprocess
from pathlib import Path

from services.core.errors import EngineError
from services.local_engines.backend import LocalBackend, LocalEngineSpec, Log, register_backend
from services.local_engines.catalog import MODEL_NAME, local_port, specs
from services.local_engines.installer import make_venv, pip_install
from services.local_engines.paths import engines_dir

ROUTER_PACKAGE = "smg==1.13.0"
#: The backends whose servers the router fronts, when chosen: OpenAI-compatible chat servers.
#: vLLM is left out so that the router's workers are the engines it is compared with in the
#: cache-aware demo (llama.cpp with and without its prompt cache); SGLang joins under its own
#: model name ("smollm2"), which the router serves beside the llama.cpp one.
ROUTED_BACKENDS = ("llamacpp", "sglang")


def smg_path() -> Path:
    return engines_dir() / "router-venv" / "bin" / "smg"


def proof_marker() -> Path:
    return engines_dir() / "router-venv" / "shootout-proof.txt"


def metrics_port(port: int) -> int:
    """The router's Prometheus port: the one after its own (8087 -> 8088)."""
    return port + 1


def worker_urls() -> list[str]:
    """The base URLs of the chosen local servers the router fronts, in port order."""
    return [f"http://127.0.0.1:{s.port}" for s in specs() if s.backend in ROUTED_BACKENDS]


@register_backend
class RouterBackend(LocalBackend):
    name = "router"
    #: After every engine it fronts: they must run before it starts.
    start_order = 90
    #: A Rust binary.
    typical_start_s = 1.0
    fronts_others = True
    install_note = "SGLang's router: PyPI's smg 1.13, a prebuilt Rust binary (seconds, about 150 MB)"
    # 200 once at least one worker is registered and healthy; /health answers 200 from the
    # first second, before the router can route anything.
    health_path = "/readiness"
    served_model = MODEL_NAME

    def specs(self) -> list[LocalEngineSpec]:
        port = local_port(8087)
        return [
            LocalEngineSpec(
                id="router-llamacpp",
                kind="router",
                label="SGLang router (smg) · cache-aware · llama.cpp workers",
                port=port,
                args=("--policy", "cache_aware"),
                start_timeout_s=60,
                description=(
                    "SGLang's router (smg) in front of the local llama.cpp servers (and SGLang when "
                    "chosen), sending each prompt to the worker that saw its prefix."
                ),
                metrics_port=metrics_port(port),
            )
        ]

    def installed(self) -> bool:
        return smg_path().exists() and proof_marker().exists()

    def install(self, log: Log) -> None:
        make_venv("router", log)
        proof_marker().unlink(missing_ok=True)
        pip_install("router", [ROUTER_PACKAGE], log)
        version = prove(log)
        proof_marker().write_text(version + "\n")

    def command(self, port: int, args: tuple[str, ...] | list[str]) -> tuple[list[str], dict[str, str]]:
        if not smg_path().exists():
            raise EngineError("SGLang's router is not installed: run `shootout local install router`.")
        workers = worker_urls()
        if not workers:
            raise EngineError(
                "The router has no workers: choose llamacpp or sglang too in SHOOTOUT_LOCAL_ENGINES."
            )
        command = [
            str(smg_path()),
            "launch",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--worker-urls",
            *workers,
            # Its metrics listen on 0.0.0.0:29000 unless told otherwise.
            "--prometheus-host",
            "127.0.0.1",
            "--prometheus-port",
            str(metrics_port(port)),
            # Plain lines for the log tail shown on failure (its default output is coloured),
            # and only what went wrong: at info it logs every worker probe.
            "--log-json",
            "--log-level",
            "warn",
            "--shutdown-grace-period-secs",
            "2",
            # A worker still starting (SGLang takes minutes) is retried every 5 s rather than 30:
            # it joined 6 s after it came up here.
            "--worker-startup-check-interval",
            "5",
            *args,
        ]
        return command, {"HF_HUB_OFFLINE": "1"}


def prove(log: Log) -> str:
    """Run the installed `smg --version`: the binary runs on this CPU (a prebuilt wheel)."""
    try:
        result = subprocess.run(
            [str(smg_path()), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EngineError(f"smg does not run on this machine: {error}") from error
    version = result.stdout.strip()
    if result.returncode != 0 or not version.startswith("smg "):
        last = (result.stderr or result.stdout).strip().splitlines()[-1:]
        raise EngineError(f"smg does not run on this machine: {last[0] if last else result.returncode}")
    log(f"router: {version} runs here")
    return version
