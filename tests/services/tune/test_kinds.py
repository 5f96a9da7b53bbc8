"""Which kinds Tune offers and how: each kind's catalogue comes from its own package, the local
launcher starts every kind that has a local backend, and no tune module branches on a kind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import services.tune
from services.core.errors import ValidationError
from services.engines import endpoints
from services.local_engines import backend
from services.tune import jobs
from services.tune import view as views
from services.tune.spec import TuneSpec, catalogue, local_kinds, setting_args


def _backend(name: str) -> backend.LocalBackend:
    """A local backend that is only registered (nothing here installs or starts it)."""
    return type(f"{name}Backend", (backend.LocalBackend,), {"name": name, "served_model": "m"})()


@pytest.fixture
def sglang_and_router_run_here(monkeypatch: pytest.MonkeyPatch) -> None:
    backend.backends()  # the real ones first, so these are not overwritten by a later load
    for name in ("sglang", "router"):
        monkeypatch.setitem(backend._BACKENDS, name, _backend(name))


def test_a_kind_with_a_local_backend_is_tuned_through_the_local_launcher(
    sglang_and_router_run_here: None,
) -> None:
    assert local_kinds()[:2] == ("llamacpp", "vllm") and "sglang" in local_kinds()
    assert "router" not in local_kinds()  # a local backend without tunable settings
    spec = TuneSpec(kind="sglang", grid={"max-running-requests": ("4", "8")}).validate(trusted=False)
    assert spec.launcher == "local"
    # The verified 2-core run's bounds, unless a configuration says otherwise.
    full = spec.full_settings({"max-running-requests": "4"})
    assert full == {"context-length": "2048", "max-total-tokens": "16384", "max-running-requests": "4"}
    # Without a local backend a kind needs command templates.
    assert "trtllm" not in local_kinds()
    with pytest.raises(ValidationError, match="does not run on this machine"):
        TuneSpec(kind="trtllm", grid={"max_batch_size": ("8",)}).validate(trusted=False)


def test_sglang_tunes_its_scheduler_and_kv_pool() -> None:
    keys = {setting.key for setting in catalogue()["sglang"]}
    assert {
        "max-running-requests",
        "chunked-prefill-size",
        "schedule-policy",
        "max-total-tokens",
    } <= keys
    args, env = setting_args(
        "sglang",
        {
            "max-running-requests": "8",
            "chunked-prefill-size": "-1",
            "schedule-policy": "lpm",
            "max-total-tokens": "16384",
        },
    )
    assert args == [
        "--max-running-requests",
        "8",
        "--chunked-prefill-size",
        "-1",
        "--schedule-policy",
        "lpm",
        "--max-total-tokens",
        "16384",
    ]
    assert env == {}
    with pytest.raises(ValidationError, match="schedule-policy"):
        TuneSpec(
            kind="sglang", launcher="command", start_command="s {port}", grid={"schedule-policy": ("x",)}
        ).validate(trusted=True)


def test_a_tuned_winner_registers_on_its_kinds_port(db_url: str) -> None:
    spec = TuneSpec(
        kind="sglang",
        launcher="command",
        start_command="serve --port {port} {args}",
        grid={"max-running-requests": ("8",)},
    )
    run_id = jobs.create_run(spec, trusted=True)
    best = {"label": "max-running-requests=8", "reason": "the only one", "settings": {}, "launch": {}}
    jobs._update(run_id, summary={"configs": [], "best": best})
    name = views.register_winner(run_id, "", None)
    [record] = endpoints.list_engines()
    # The port its docker command publishes (SGLang's 30000), not another kind's.
    assert (record.name, record.base_url) == (name, "http://127.0.0.1:30000")


def test_no_tune_module_branches_on_an_engine_kind() -> None:
    folder = Path(services.tune.__file__).parent
    for module in sorted(folder.glob("*.py")):
        found = re.findall(r"kind\s*[!=]=\s*[\"'][a-z]+[\"']", module.read_text())
        assert not found, f"{module.name}: {found}: a per-kind attribute belongs in the kind's package"
