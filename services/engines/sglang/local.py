"""SGLang as a local engine: `sglang.launch_server` 0.5.23 on the CPU (torch-native attention,
no GPU, no AMX) in its own environment, serving the SmolLM2 HF folder vLLM serves, with its
radix prefix cache (RadixAttention).

The recipe is the one verified in ../shared/guide/local-engines.md ("SGLang 0.5.23 on CPU"):
SGLang's declared dependencies are the CUDA set (flashinfer, sglang-kernel, cuda-python...), so
it is installed with --no-deps beside the CPU set it actually imports, and an import-only
`sgl_kernel` stand-in (see STANDIN_SOURCE) replaces the CPU build of sgl-kernel, which is not on
PyPI. Nothing counts as installed before a real chat request was answered on this CPU.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from services.core import http
from services.core.errors import EngineError
from services.local_engines import machine, progress
from services.local_engines.backend import LocalBackend, LocalEngineSpec, Log, register_backend
from services.local_engines.catalog import SERVED_NAME, local_port, niced
from services.local_engines.installer import (
    at_install_priority,
    ensure_hf_model,
    make_venv,
    pip_install,
)
from services.local_engines.paths import (
    engines_dir,
    hf_model_dir,
    read_marker,
    smoke_marker,
    venv_python,
    write_marker,
)
from services.local_engines.state import free_port

SGLANG_VERSION = "0.5.23"
#: SGLang's own torch pin. vLLM's torch 2.13.0+cpu does not do: SGLang imports torchvision on
#: every start and PyPI has only CUDA builds of torchvision, which die beside a +cpu torch.
TORCH_PINS = ("torch==2.14.1", "torchvision==0.29.1")
#: What SGLang imports on the CPU path (the guide's list, installed under TORCH_PINS).
CPU_DEPENDENCIES = (
    "aiohttp",
    "anthropic>=0.20.0",
    "blobfile==3.0.0",
    "build",
    "compressed-tensors==0.18.0",
    "datasets",
    "distro",
    "easydict",
    "einops",
    "fastapi",
    "gguf",
    "interegular",
    "IPython",
    "llguidance>=1.7.6,<2",
    "mistral_common>=1.11.5",
    "modelscope",
    "msgspec",
    "ninja",
    "numpy",
    "nvidia-ml-py",
    "openai==2.8.0",
    "openai-harmony==0.0.4",
    "orjson",
    "outlines==0.1.11",
    "packaging",
    "partial_json_parser",
    "pillow",
    "prometheus-client>=0.20.0",
    "psutil",
    "py-spy",
    "pybase64",
    "pydantic",
    "python-dateutil<3",
    "python-multipart",
    "pyzmq>=25.1.2",
    "regex",
    "requests",
    "scipy",
    "sentencepiece==0.2.1",
    "setproctitle",
    "soundfile==0.13.1",
    "tiktoken",
    "tokenizers==0.23.2",
    "tqdm",
    "transformers==5.19.0",
    "uvicorn>=0.51",
    "uvloop",
    "watchfiles",
    "xgrammar==0.2.7",
    "xxhash",
    "zstandard",
)

#: Below these the install is not tried: the venv takes 6.7 GB (more while pip unpacks) and
#: the server holds about 3.8 GB RSS in bf16 (more in fp32).
MIN_AVAILABLE_MEMORY_GB = 6.0
MIN_FREE_DISK_GB = 10.0

#: The fixed flags of every SGLang start here (the rest, tunable, come from the spec or a tune).
#: --sleep-on-idle: without it the idle scheduler busy-polls a whole core (101% measured);
#: --enable-cache-report: without it `usage.prompt_tokens_details` (cached tokens) is null.
BASE_FLAGS = (
    "--device",
    "cpu",
    "--attention-backend",
    "torch_native",
    "--sampling-backend",
    "pytorch",
    "--disable-overlap-schedule",
    "--tp",
    "1",
    "--enable-metrics",
    "--enable-cache-report",
    "--sleep-on-idle",
)
#: Tunable bounds every start gets unless it sets them: --max-total-tokens bounds the KV pool
#: (a default CPU run can claim tens of GB).
DEFAULT_SETTINGS = (
    ("--context-length", "2048"),
    ("--max-total-tokens", "16384"),
    ("--max-running-requests", "8"),
)
START_TIMEOUT_S = 240.0

#: What the stand-in's errors say: the server's log must never hold it.
STANDIN_MARK = "sgl_kernel stand-in"

STANDIN_SOURCE = '''"""Import-only stand-in for `sgl_kernel`, written by Shootout's installer
(services/engines/sglang/local.py). It is not sgl-kernel and computes nothing.

Why it exists: with SGLANG_USE_CPU_ENGINE=1, SGLang 0.5.23 imports CPU ops from `sgl_kernel`
when its modules load (srt/mem_cache/allocation.py, kernels/ops/kvcache/cache_move.py, the
speculative-decoding ops in kernels/ops/speculative/). The CPU build of sgl-kernel is not on
PyPI (its source is only in SGLang's repository) and PyPI's `sglang-kernel` wheel is CUDA-only.
On a CPU without AMX, SGLang never calls these ops: every layer runs its torch-native fallback,
attention the torch_native backend, sampling the pytorch backend. This package registers no
torch ops, so SGLang's `cpu_has_amx_support()` stays false even on a CPU with AMX.

What it excludes: speculative decoding, the hierarchical (host-memory) KV cache and the AMX
kernels. Shootout starts SGLang with none of them.

Every attribute of this module is a function that raises NotImplementedError
("sgl_kernel stand-in: <name> called ...") if it is ever called, so such a request fails
loudly and the server's log names the op. It has no submodules on purpose: SGLang imports
`sgl_kernel.scalar_type` (and others) inside `try: ... except ImportError` and falls back to
its own code when they are missing.
"""

from typing import NoReturn

MARK = "sgl_kernel stand-in"


def _stand_in(name: str):
    def stand_in(*args: object, **kwargs: object) -> NoReturn:
        raise NotImplementedError(
            f"{MARK}: sgl_kernel.{name} called. This SGLang runs without sgl-kernel's CPU ops; "
            "the path that needs them (speculative decoding, hierarchical cache, AMX kernels) "
            "is not supported here."
        )

    stand_in.__name__ = stand_in.__qualname__ = name
    return stand_in


def __getattr__(name: str):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return _stand_in(name)
'''


def venv_dir() -> Path:
    return engines_dir() / "sglang-venv"


def standin_dir() -> Path:
    """Put on PYTHONPATH by `command()`; holds the package `sgl_kernel`."""
    return venv_dir() / "sgl-kernel-standin"


def write_standin(directory: Path | None = None) -> Path:
    package = (directory or standin_dir()) / "sgl_kernel"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(STANDIN_SOURCE)
    return package


def cpu_dtype(cpu: machine.CpuFeatures | None = None) -> str:
    """bfloat16 where the CPU has avx512_bf16 (and the kernel enables AVX-512), else float32,
    as the verified recipe runs it."""
    cpu = cpu or machine.detect_cpu()
    return "bfloat16" if cpu.usable("GGML_AVX512_BF16", ("avx512_bf16",)) else "float32"


def available_memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024 / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def machine_reason(memory_gb: float | None, disk_gb: float, venv_present: bool) -> str | None:
    """Why this machine cannot run SGLang (one line), or None. The disk check is skipped when
    the environment is already there (a failed smoke run tried again)."""
    if memory_gb is not None and memory_gb < MIN_AVAILABLE_MEMORY_GB:
        return (
            f"SGLang needs about {MIN_AVAILABLE_MEMORY_GB:.0f} GB of available memory; "
            f"this machine has {memory_gb:.1f} GB"
        )
    if not venv_present and disk_gb < MIN_FREE_DISK_GB:
        return (
            f"SGLang needs about {MIN_FREE_DISK_GB:.0f} GB of free disk for its environment; "
            f"{engines_dir()} has {disk_gb:.1f} GB"
        )
    return None


def _sglang_present() -> bool:
    return any((venv_dir() / "lib").glob(f"python3*/site-packages/sglang-{SGLANG_VERSION}.dist-info"))


@register_backend
class SglangBackend(LocalBackend):
    name = "sglang"
    start_order = 30
    #: Its imports and its scheduler process: 1.8 to 2.5 min beside other work.
    typical_start_s = 110.0
    #: The heaviest install (6.7 GB to unpack, a proving start) for one engine: behind the others.
    install_priority = 2
    install_note = (
        f"SGLang {SGLANG_VERSION} for the CPU: torch 2.14.1 and SGLang's CPU dependency set "
        "(about 4 minutes with pip's cache warm, smoke run included; 6.7 GB, of which 3.2 GB are "
        "CUDA wheels torch pulls in and the CPU path never loads) and an import-only sgl_kernel "
        "stand-in"
    )
    served_model = SERVED_NAME

    def specs(self) -> list[LocalEngineSpec]:
        return [
            LocalEngineSpec(
                id="sglang-cpu",
                kind="sglang",
                label="SGLang (CPU) · RadixAttention",
                port=local_port(8084),
                args=tuple(part for pair in DEFAULT_SETTINGS for part in pair),
                start_timeout_s=START_TIMEOUT_S,
                description=(
                    "SGLang's server on the CPU (torch-native attention) with its radix prefix "
                    "cache (RadixAttention)."
                ),
            )
        ]

    def installed(self) -> bool:
        if not (venv_python("sglang").exists() and (standin_dir() / "sgl_kernel").is_dir()):
            return False
        if not (hf_model_dir() / ".complete").exists():
            return False
        marker = read_marker("sglang")
        return marker.get("cpu") == machine.this_cpu() and marker.get("sglang") == SGLANG_VERSION

    def install(self, log: Log) -> None:
        engines_dir().mkdir(parents=True, exist_ok=True)
        reason = machine_reason(
            available_memory_gb(),
            shutil.disk_usage(engines_dir()).free / 1024**3,
            _sglang_present(),
        )
        if reason:
            raise EngineError(reason)
        smoke_marker("sglang").unlink(missing_ok=True)
        make_venv("sglang", log)
        constraints = venv_dir() / "shootout-constraints.txt"
        constraints.write_text("\n".join(TORCH_PINS) + "\n")
        pip_install("sglang", ["-c", str(constraints), *TORCH_PINS], log)
        pip_install("sglang", ["--no-deps", f"sglang=={SGLANG_VERSION}"], log)
        pip_install("sglang", ["-c", str(constraints), *CPU_DEPENDENCIES], log)
        log(
            "sglang: pip's warning that sglang requires flashinfer, sglang-kernel, cuda-python... is expected"
        )
        write_standin()
        ensure_hf_model("sglang", log)
        progress.phase("smoke test")
        result = smoke_run(log)
        write_marker(
            "sglang",
            {
                "cpu": machine.this_cpu(),
                "sglang": SGLANG_VERSION,
                "dtype": cpu_dtype(),
                "smoke": result.message,
                "seconds": round(result.seconds, 1),
            },
        )
        log(f"sglang works on this CPU: {result.message} in {result.seconds:.0f} s")

    def command(self, port: int, args: tuple[str, ...] | list[str]) -> tuple[list[str], dict[str, str]]:
        model_dir = hf_model_dir()
        if not (model_dir / ".complete").exists():
            raise EngineError(
                f"The converted model is missing ({model_dir}): run `shootout local install`."
            )
        if not venv_python("sglang").exists():
            raise EngineError("SGLang is not installed: run `shootout local install sglang`.")
        command = [
            str(venv_python("sglang")),
            "-m",
            "sglang.launch_server",
            "--model-path",
            str(model_dir),
            "--served-model-name",
            SERVED_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *BASE_FLAGS,
            "--dtype",
            cpu_dtype(),
            *args,
        ]
        return command, {
            # The app's own PYTHONPATH must not leak into the engine's environment.
            "PYTHONPATH": str(standin_dir()),
            "SGLANG_USE_CPU_ENGINE": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "OMP_NUM_THREADS": "2",
        }


@dataclass(frozen=True)
class SmokeResult:
    message: str
    seconds: float


SMOKE_QUESTION = "What is the capital of France? Answer in one word."
SMOKE_ANSWER = "paris"


def smoke_run(log: Log, timeout_s: float = START_TIMEOUT_S) -> SmokeResult:
    """Start the server on a free loopback port, ask one real chat question, stop it. Raises
    EngineError with the reason (and the log's last lines) when it does not answer."""
    started = time.monotonic()
    backend = SglangBackend()
    port = free_port()
    argv, extra_env = backend.command(port, [part for pair in DEFAULT_SETTINGS for part in pair])
    log(f"sglang: smoke run on port {port} (start-up takes 20-60 s)")
    with tempfile.TemporaryDirectory(prefix="sglang-smoke-", dir=engines_dir()) as tmp:
        log_path = Path(tmp) / "server.log"
        with open(log_path, "wb") as out:
            process = subprocess.Popen(
                at_install_priority(niced(argv)),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **extra_env},
                start_new_session=True,
                cwd=tmp,
            )
        try:
            answer = _smoke_ask(process, port, log_path, timeout_s)
            if STANDIN_MARK in log_path.read_text(errors="replace"):
                raise EngineError(f"SGLang called the sgl_kernel stand-in: {_tail(log_path, 1)}")
        finally:
            _stop(process)
    return SmokeResult(f"answered {answer!r}", time.monotonic() - started)


#: The smoke run's chat answer: 8 tokens, SGLang's first request, on a machine still busy.
SMOKE_ANSWER_S = 90.0


def _smoke_ask(process: subprocess.Popen, port: int, log_path: Path, timeout_s: float) -> str:
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            how, _ = machine.describe_exit(code)
            raise EngineError(f"SGLang {how} while starting: {_tail(log_path, 1)}")
        try:
            health = http.fetch("GET", base + "/health", deadline_s=2.0, max_bytes=64 * 1024)
        except http.HttpError:
            health = None
        if health is None or health.status != 200:
            time.sleep(1.0)
            continue
        body = {
            "model": SERVED_NAME,
            "messages": [{"role": "user", "content": SMOKE_QUESTION}],
            "max_tokens": 8,
            "temperature": 0,
        }
        try:
            reply = http.fetch(
                "POST",
                base + "/v1/chat/completions",
                json=body,
                # Its own allowance, not what the start left of the deadline: on a first install
                # beside the llama.cpp compile, SGLang came up near the end of it and its first
                # 8 tokens (warm-up included) took longer than the 10 s left (seen 2026-12-06).
                deadline_s=max(SMOKE_ANSWER_S, deadline - time.monotonic()),
                max_bytes=1024 * 1024,
            )
            payload = reply.json()
            text = payload["choices"][0]["message"]["content"] or ""
        except (http.HttpError, KeyError, IndexError, TypeError) as error:
            raise EngineError(f"SGLang did not answer a chat request: {error}") from None
        if reply.status != 200 or not text.strip():
            raise EngineError(f"SGLang answered HTTP {reply.status} with no text: {_tail(log_path, 1)}")
        # Greedy SmolLM2 says Paris in bf16 and fp32; anything else means wrong numerics here.
        if SMOKE_ANSWER not in text.lower():
            raise EngineError(f"SGLang answered {text.strip()[:80]!r} to {SMOKE_QUESTION!r}")
        return str(text.strip())
    raise EngineError(f"SGLang was not healthy after {timeout_s:.0f} s: {_tail(log_path, 1)}")


def _tail(path: Path, lines: int) -> str:
    try:
        text = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return " / ".join(text[-lines:])


def _stop(process: subprocess.Popen, timeout_s: float = 20.0) -> None:
    """SIGTERM to the server's group (the launcher stops its scheduler and detokenizer in
    4-7 s), SIGKILL after `timeout_s`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            break
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            continue
    process.wait()
    try:  # a scheduler or detokenizer the launcher left behind
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
