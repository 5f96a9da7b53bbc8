"""Triton Inference Server as a local engine, labelled as what it is: the real `tritonserver` 2.51
that PyPI's nvidia-pytriton bundles, serving SmolLM2 through a Python-backend model (decoupled,
so `generate_stream` streams) written by the installer. Not TensorRT-LLM: that backend needs an
NVIDIA GPU.

The model's Python (the backend's stub) needs torch and transformers. The leanest way: the
Triton environment reads them from the vLLM (or SGLang) environment through a .pth file placed
after its own site-packages, so its numpy<2 (PyTriton's pin) wins and nothing is installed twice
(0 bytes instead of 1.1 GB: torch 754 MB, transformers 120 MB and theirs). Without such an environment, CPU torch and
transformers are installed into the Triton one.

One Triton per machine at the fixed ports; the installer's smoke run uses free ports of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from services.core.errors import EngineError
from services.local_engines import progress
from services.local_engines.backend import LocalBackend, LocalEngineSpec, Log, register_backend
from services.local_engines.catalog import SERVED_NAME, local_port
from services.local_engines.installer import (
    at_install_priority,
    ensure_hf_model,
    make_venv,
    pip_install,
    wait_for_install,
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

PYTRITON_PACKAGE = "nvidia-pytriton==0.7.0"
#: Only the server binary and its Python backend are used, never PyTriton's Python API: its
#: dependencies (grpcio, gevent, tritonclient, pydantic, ... about 180 MB) stay out. The stub's
#: numpy stays below 2, PyTriton's own pin.
PYTRITON_INSTALL = ("--no-deps", PYTRITON_PACKAGE, "numpy==1.26.4")
#: The model's own dependencies when no other engine's environment has them (vLLM's pins).
MODEL_PACKAGES = ("torch==2.13.0+cpu", "transformers==5.19.0")
#: Environments whose torch and transformers the model may borrow, best first.
SHARED_TORCH_FROM = ("vllm", "sglang")
MODEL_SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "triton_model.py"
SMOKE_TIMEOUT_S = 240.0

#: The model's inputs and outputs: the names Triton's generate extension maps JSON keys onto.
MODEL_CONFIG = """\
name: "{name}"
backend: "python"
max_batch_size: 0
model_transaction_policy {{ decoupled: true }}
input [
  {{ name: "text_input" data_type: TYPE_STRING dims: [ 1 ] optional: true }},
  {{ name: "messages" data_type: TYPE_STRING dims: [ 1 ] optional: true }},
  {{ name: "max_tokens" data_type: TYPE_INT32 dims: [ 1 ] optional: true }},
  {{ name: "temperature" data_type: TYPE_FP32 dims: [ 1 ] optional: true }},
  {{ name: "top_p" data_type: TYPE_FP32 dims: [ 1 ] optional: true }},
  {{ name: "seed" data_type: TYPE_INT64 dims: [ 1 ] optional: true }},
  {{ name: "ignore_eos" data_type: TYPE_BOOL dims: [ 1 ] optional: true }},
  {{ name: "stream" data_type: TYPE_BOOL dims: [ 1 ] optional: true }}
]
output [
  {{ name: "text_output" data_type: TYPE_STRING dims: [ 1 ] }},
  {{ name: "output_tokens" data_type: TYPE_INT32 dims: [ 1 ] }},
  {{ name: "prompt_tokens" data_type: TYPE_INT32 dims: [ 1 ] }},
  {{ name: "finish_reason" data_type: TYPE_STRING dims: [ 1 ] }}
]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
parameters {{ key: "model_dir" value: {{ string_value: "{model_dir}" }} }}
parameters {{ key: "threads" value: {{ string_value: "1" }} }}
"""


def venv_dir() -> Path:
    return engines_dir() / "triton-venv"


def site_packages() -> Path:
    return (
        venv_dir() / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    )


def pytriton_dir() -> Path:
    return site_packages() / "pytriton" / "tritonserver"


def server_binary() -> Path:
    return pytriton_dir() / "bin" / "tritonserver"


def backends_dir() -> Path:
    return venv_dir() / "shootout-backends"


def repository_dir() -> Path:
    return engines_dir() / "triton-repo"


@register_backend
class TritonBackend(LocalBackend):
    name = "triton"
    start_order = 40
    #: The server and the model's Python stub, which imports torch.
    typical_start_s = 15.0
    install_note = (
        "PyPI's nvidia-pytriton 0.7 (its tritonserver 2.51 binary and Python backend, about 250 MB) "
        "and a Python-backend model repository; torch and transformers come from the vLLM "
        "environment when it is installed (else about 1.1 GB more)"
    )
    health_path = "/v2/health/ready"
    served_model = SERVED_NAME

    def specs(self) -> list[LocalEngineSpec]:
        return [
            LocalEngineSpec(
                id="triton-python",
                kind="triton",
                label="Triton (Python backend)",
                port=local_port(8085),
                args=("--metrics-port", str(local_port(8086))),
                start_timeout_s=180,
                metrics_port=local_port(8086),
                served_by="Triton (Python backend)",
                description=(
                    "Triton Inference Server 2.51 (from nvidia-pytriton) serving SmolLM2 through a "
                    "decoupled Python-backend model with torch: generate and generate_stream, "
                    f"nv_inference_* metrics on port {local_port(8086)}. Not TensorRT-LLM."
                ),
            )
        ]

    def installed(self) -> bool:
        marker = read_marker("triton")
        shared = marker.get("torch_from")
        return (
            server_binary().exists()
            and (backends_dir() / "python" / "triton_python_backend_stub").exists()
            and (hf_model_dir() / ".complete").exists()
            and bool(marker.get("smoke"))
            and (not shared or Path(shared).exists())
        )

    def install(self, log: Log) -> None:
        install_triton(log)

    def command(self, port: int, args: tuple[str, ...] | list[str]) -> tuple[list[str], dict[str, str]]:
        if not server_binary().exists():
            raise EngineError("Triton is not installed: run `shootout local install triton`.")
        # Written at every start, so a changed model script needs no reinstall.
        repository = write_repository()
        metrics_port = _arg(args, "--metrics-port") or str(local_port(8086))
        rest = _without(args, "--metrics-port")
        command = [
            str(server_binary()),
            f"--model-repository={repository}",
            f"--backend-directory={backends_dir()}",
            "--http-address=127.0.0.1",
            f"--http-port={port}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={metrics_port}",
            "--allow-grpc=false",
            "--allow-metrics=true",
            # Triton 2.51 has no first-response histogram; its latency summaries are opt-in.
            "--metrics-config=summary_latencies=true",
            # Skips a second stub start (with torch's import) that only fills in the config.
            "--disable-auto-complete-config",
            "--pinned-memory-pool-byte-size=0",
            "--exit-timeout-secs=5",
            *rest,
        ]
        return command, server_environment()


def _arg(args: tuple[str, ...] | list[str], name: str) -> str | None:
    items = list(args)
    return items[items.index(name) + 1] if name in items[:-1] else None


def _without(args: tuple[str, ...] | list[str], name: str) -> list[str]:
    items, out, skip = list(args), [], False
    for item in items:
        if skip:
            skip = False
        elif item == name:
            skip = True
        else:
            out.append(item)
    return out


def server_environment() -> dict[str, str]:
    """What tritonserver and its Python stub need: the wheel's bundled libraries, and this
    Python's own libpython first (the stub would load the system's, whose ABI may differ from
    the environment's standard library); the stub's embedded Python finds the Triton
    environment (and so its site-packages) through `python3` on PATH."""
    libdir = read_marker("triton").get("libpython_dir") or ""
    libs = [p for p in (libdir, str(site_packages() / "nvidia_pytriton.libs")) if p]
    return {
        "LD_LIBRARY_PATH": ":".join([*libs, os.environ.get("LD_LIBRARY_PATH", "")]).rstrip(":"),
        "PATH": f"{venv_dir() / 'bin'}:{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def write_repository(name: str = SERVED_NAME) -> Path:
    """The model repository: one decoupled Python-backend model generating with SmolLM2."""
    model_dir = hf_model_dir()
    if not (model_dir / ".complete").exists():
        raise EngineError(f"The converted model is missing ({model_dir}): run `shootout local install`.")
    version = repository_dir() / name / "1"
    version.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(MODEL_SCRIPT, version / "model.py")
    (repository_dir() / name / "config.pbtxt").write_text(
        MODEL_CONFIG.format(name=name, model_dir=model_dir)
    )
    return repository_dir()


def install_triton(log: Log = print) -> None:
    """Install nvidia-pytriton in its own environment, lay out the Python backend with this
    Python's stub, give the model torch and transformers, and prove it: the real server
    answers one generate request. A failure says why in one line."""
    make_venv("triton", log)
    pip_install("triton", list(PYTRITON_INSTALL), log)
    if not server_binary().exists():
        raise EngineError(f"nvidia-pytriton has no tritonserver at {server_binary()}")
    smoke_marker("triton").unlink(missing_ok=True)
    libdir = _shared_libpython_dir()
    _lay_out_backend(log)
    # vLLM's torch, where vLLM is being installed beside: its download overlapped with ours.
    wait_for_install("vllm", log)
    shared = _borrow_torch(log)
    if shared is None:
        log("triton: installing CPU torch and transformers for the model (about 1.1 GB)")
        pip_install("triton", list(MODEL_PACKAGES), log)
    ensure_hf_model("triton", log)
    marker = {"torch_from": str(shared) if shared else None, "libpython_dir": libdir}
    write_marker("triton", marker)
    progress.phase("smoke test")
    message = smoke_run(log)
    write_marker("triton", {**marker, "smoke": message})
    log(f"triton works here: {message}")


def _shared_libpython_dir() -> str:
    answer = subprocess.run(
        [
            str(venv_python("triton")),
            "-c",
            "import sysconfig as s; print(s.get_config_var('Py_ENABLE_SHARED') or 0, s.get_config_var('LIBDIR'))",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    shared, _, libdir = answer.stdout.strip().partition(" ")
    if answer.returncode != 0 or shared != "1":
        raise EngineError(
            "this Python has no shared libpython, which Triton's Python backend stub loads "
            "(use a Python built with --enable-shared)"
        )
    return libdir


def _lay_out_backend(log: Log) -> None:
    """The wheel ships the backend without a stub and one stub per Python minor beside it
    (PyTriton copies them together at run time); do that once, for this Python."""
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = pytriton_dir() / "python_backend_stubs" / minor / "triton_python_backend_stub"
    if not stub.exists():
        raise EngineError(f"nvidia-pytriton has no Python backend stub for Python {minor}")
    target = backends_dir() / "python"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(
        pytriton_dir() / "backends" / "python", target, ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy2(stub, target / "triton_python_backend_stub")
    log(f"triton: Python backend with the stub for Python {minor} in {target}")


def _borrow_torch(log: Log) -> Path | None:
    """Point the Triton environment at another engine's torch and transformers (a .pth file,
    read after its own site-packages); None when no such environment is installed."""
    pth = site_packages() / "zz-shootout-shared-torch.pth"
    pth.unlink(missing_ok=True)
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for venv in SHARED_TORCH_FROM:
        other = engines_dir() / f"{venv}-venv" / "lib" / minor / "site-packages"
        if not ((other / "torch").is_dir() and (other / "transformers").is_dir()):
            continue
        pth.write_text(f"{other}\n")
        # Our numpy<2 comes first, and a package there may not load beside it (seen: a PyPI
        # torchvision that does not match the CPU torch breaks transformers' LlamaConfig):
        # borrow only what imports as the model will import it.
        problem = _model_imports_fail()
        if problem is None:
            log(f"triton: the model uses torch and transformers from {other}")
            return other
        log(f"triton: cannot borrow torch and transformers from {other}: {problem}")
        pth.unlink(missing_ok=True)
    return None


def _model_imports_fail() -> str | None:
    """None when the model's imports load in the Triton environment, else the last error line."""
    check = "import torch, transformers; from transformers import AutoTokenizer, LlamaConfig"
    try:
        answer = subprocess.run(
            [str(venv_python("triton")), "-c", check],
            check=False,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return "importing torch and transformers took over 300 s"
    if answer.returncode == 0:
        return None
    lines = [line for line in answer.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit code {answer.returncode}"


def smoke_run(log: Log, timeout_s: float = SMOKE_TIMEOUT_S) -> str:
    """Start the server on free ports, ask for a few tokens, stop it; the answer in words."""
    port, metrics = free_port(), free_port()
    command, env = TritonBackend().command(port, ("--metrics-port", str(metrics)))
    log_path = venv_dir() / "smoke.log"
    log(f"triton: smoke run on port {port}")
    with open(log_path, "wb") as out:
        process = subprocess.Popen(
            at_install_priority(command),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **env},
            start_new_session=True,
        )
    started = time.monotonic()
    try:
        base = f"http://127.0.0.1:{port}"
        while not _ready(base + "/v2/health/ready"):
            if process.poll() is not None or time.monotonic() - started > timeout_s:
                raise EngineError(f"tritonserver did not become ready: {_last_error(log_path)}")
            time.sleep(1.0)
        body = json.dumps({"text_input": "Hello", "max_tokens": 4, "temperature": 0}).encode()
        request = urllib.request.Request(
            f"{base}/v2/models/{SERVED_NAME}/generate", data=body, method="POST"
        )
        with urllib.request.urlopen(request, timeout=120) as reply:
            answer = json.loads(reply.read())
        tokens = int(answer.get("output_tokens") or 0)
        if tokens <= 0:
            raise EngineError(f"the smoke request generated nothing: {answer}")
        return f"generated {tokens} tokens ({answer.get('text_output', '')!r}) {time.monotonic() - started:.1f} s after start"
    except (OSError, ValueError) as error:
        raise EngineError(f"the smoke request failed: {error}; {_last_error(log_path)}") from error
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the smoke server's process group; one that already exited (a model that failed to
    load) must not hide the reason with a ProcessLookupError."""
    for sig, wait_s in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
    if process.poll() is None:
        process.wait(timeout=10)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def _last_error(log_path: Path) -> str:
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    errors = [line for line in lines if "rror" in line and "NVML" not in line and "DCGM" not in line]
    return (errors or lines or ["no log"])[-1][:300]
