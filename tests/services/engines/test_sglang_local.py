"""SGLang's local backend without running it: the sgl_kernel stand-in fails loudly, the command
line follows the verified recipe, a machine too small gets one line and no install, and only a
smoke run on this CPU counts as installed."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.core.errors import EngineError
from services.engines.sglang import local
from services.local_engines import get_backend, installer, machine
from services.local_engines.paths import write_marker

#: What SGLang 0.5.23 takes from sgl_kernel on the CPU path (traced at start-up and under traffic).
CPU_PATH_NAMES = (
    "assign_draft_cache_locs_contiguous_cpu",
    "assign_extend_cache_locs_cpu",
    "assign_req_to_token_pool_cpu",
    "build_tree_kernel_efficient_cpu",
    "copy_all_layer_kv_cache_cpu",
    "fill_accept_out_cache_loc_cpu",
    "fill_bonus_tokens_cpu",
    "verify_tree_greedy_cpu",
)


@pytest.fixture
def engines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path / "engines"))
    return tmp_path / "engines"


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:  # type: ignore[type-arg]
    local.write_standin(tmp_path / "standin")
    monkeypatch.syspath_prepend(str(tmp_path / "standin"))
    sys.modules.pop("sgl_kernel", None)
    yield importlib.import_module("sgl_kernel")
    sys.modules.pop("sgl_kernel", None)


@pytest.mark.parametrize("name", [*CPU_PATH_NAMES, "rmsnorm_cpu", "anything_else"])
def test_every_standin_attribute_raises_loudly(standin, name: str) -> None:  # type: ignore[no-untyped-def]
    function = getattr(standin, name)
    with pytest.raises(NotImplementedError, match=f"^sgl_kernel stand-in: sgl_kernel.{name} called"):
        function(1, key="value")


def test_standin_says_why_and_has_no_submodules(standin) -> None:  # type: ignore[no-untyped-def]
    """No submodules: SGLang imports sgl_kernel.scalar_type inside try/except ImportError and
    uses its own fallback; a stand-in there broke start-up (a function has no `uint4b8`)."""
    doc = " ".join((standin.__doc__ or "").split())
    for words in (
        "not on PyPI",
        "without AMX",
        "never calls",
        "speculative decoding",
        "hierarchical (host-memory) KV cache",
        "AMX kernels",
        "raises NotImplementedError",
    ):
        assert words in doc
    with pytest.raises(ImportError):
        importlib.import_module("sgl_kernel.scalar_type")
    with pytest.raises(AttributeError):
        standin.__version__  # noqa: B018
    assert local.STANDIN_MARK == standin.MARK


def _fake_install(engines: Path) -> None:
    python = engines / "sglang-venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.touch()
    (engines / "models" / "smollm2-135m-instruct-hf").mkdir(parents=True)
    (engines / "models" / "smollm2-135m-instruct-hf" / ".complete").touch()


def _cpu(*flags: str) -> machine.CpuFeatures:
    return machine.CpuFeatures(frozenset(flags), None)


def test_command_follows_the_recipe(engines: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_install(engines)
    monkeypatch.setattr(machine, "detect_cpu", lambda: _cpu("avx2"))
    spec = get_backend("sglang").specs()[0]
    argv, env = get_backend("sglang").command(9999, spec.args)
    assert argv[:3] == [str(engines.resolve() / "sglang-venv/bin/python"), "-m", "sglang.launch_server"]
    text = " ".join(argv)
    for part in (
        "--model-path " + str(engines.resolve() / "models/smollm2-135m-instruct-hf"),
        "--served-model-name smollm2",
        "--host 127.0.0.1 --port 9999",
        "--device cpu --attention-backend torch_native --sampling-backend pytorch",
        "--disable-overlap-schedule --tp 1",
        "--enable-metrics --enable-cache-report --sleep-on-idle",
        "--dtype float32",
        "--context-length 2048 --max-total-tokens 16384 --max-running-requests 8",
    ):
        assert part in text
    assert env == {
        "PYTHONPATH": str(engines.resolve() / "sglang-venv" / "sgl-kernel-standin"),
        "SGLANG_USE_CPU_ENGINE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OMP_NUM_THREADS": "2",
    }
    assert (spec.id, spec.kind, spec.port, spec.start_timeout_s) == ("sglang-cpu", "sglang", 8084, 240)


def test_bf16_only_where_the_cpu_computes_it() -> None:
    assert local.cpu_dtype(_cpu("avx2", "avx512f")) == "float32"
    with_bf16 = machine.CpuFeatures(frozenset({"avx512_bf16"}), (1 << 5) | (1 << 6) | (1 << 7))
    assert local.cpu_dtype(with_bf16) == "bfloat16"
    not_enabled = machine.CpuFeatures(frozenset({"avx512_bf16"}), 1 << 2)
    assert local.cpu_dtype(not_enabled) == "float32"


def test_a_tune_keeps_the_kv_bound_unless_it_sets_it() -> None:
    """One source for the CPU defaults: the local spec's arguments and a tune's defaults."""
    from services.tune.spec import TuneSpec, tunings

    assert tunings()["sglang"].local_defaults == {
        "context-length": "2048", "max-total-tokens": "16384", "max-running-requests": "8",
    }  # fmt: skip
    spec = TuneSpec(kind="sglang", grid={"max-running-requests": ("2",)})
    assert spec.full_settings({"max-running-requests": "2"}) == {
        "context-length": "2048", "max-total-tokens": "16384", "max-running-requests": "2",
    }  # fmt: skip


def test_too_little_memory_or_disk_is_one_line_and_installs_nothing(
    engines: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(local, "pip_install", lambda venv, args, log, env=None: calls.append(args))
    monkeypatch.setattr(local, "make_venv", lambda name, log: calls.append([name]))
    monkeypatch.setattr(local, "available_memory_gb", lambda: 3.2)
    lines: list[str] = []
    with pytest.raises(
        EngineError, match="Not installed: sglang: SGLang needs about 6 GB of available memory"
    ):
        installer.install(["sglang"], log=lines.append)
    assert calls == []
    # One line in the terminal (then the log's path); nothing was written to the log but that.
    said = [line for line in lines if line.startswith("sglang: NOT installed")]
    assert len(said) == 1 and said[0].endswith(
        ": SGLang needs about 6 GB of available memory; this machine has 3.2 GB"
    )
    assert "free disk" in (local.machine_reason(20.0, 4.0, venv_present=False) or "")
    assert local.machine_reason(20.0, 4.0, venv_present=True) is None
    assert local.machine_reason(None, 50.0, venv_present=False) is None


def test_installed_only_after_a_smoke_run_on_this_cpu(engines: Path) -> None:
    _fake_install(engines)
    local.write_standin()
    backend = get_backend("sglang")
    assert not backend.installed()
    marker = {"cpu": "another-cpu", "sglang": local.SGLANG_VERSION}
    write_marker("sglang", marker)
    assert not backend.installed()
    marker["cpu"] = machine.this_cpu()
    write_marker("sglang", marker)
    assert backend.installed()
    write_marker("sglang", {**marker, "sglang": "0.5.22"})
    assert not backend.installed()
