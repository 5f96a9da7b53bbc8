"""Local engines share the machine's cores (issue 47): a page that compares them says so, and
how (together or one at a time, and which other local engines run beside them)."""

from __future__ import annotations

import pytest

from services.engines.endpoints import add_engine
from services.local_engines import sharing
from tests.app.test_benchmarks_page import page as benchmarks_page
from tests.app.test_playground_page import page as playground_page


@pytest.fixture
def local_pair(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp and vLLM registered as local engines, a remote one, and SGLang running too."""
    for name, kind in (("llamacpp-4slot", "llamacpp"), ("vllm-cpu", "vllm")):
        add_engine(name, "http://127.0.0.1:9/v1", kind=kind, local_id=name)
    add_engine("remote", "http://10.0.0.9:8000/v1")
    monkeypatch.setattr(sharing, "live_ids", lambda: ["llamacpp-4slot", "vllm-cpu", "sglang-cpu"])


def _infos(at) -> str:  # type: ignore[no-untyped-def]
    return " ".join(str(e.value) for e in (*at.info, *at.caption))


def test_the_benchmark_form_says_the_cores_are_shared_and_how(local_pair: None) -> None:
    at = benchmarks_page()
    at.multiselect(key="bench_engines").set_value(["remote"]).run()
    assert not at.exception and "share this machine's" not in _infos(at)
    at.multiselect(key="bench_engines").set_value(["llamacpp-4slot", "vllm-cpu"]).run()
    shown = _infos(at)
    assert "share this machine's" in shown and "Also running here: sglang-cpu" in shown
    assert "answer at the same time" not in shown  # one after another: the default
    at.checkbox(key="bench_parallel").check().run()
    assert "The 2 compared here answer at the same time" in _infos(at)


def test_the_playground_says_its_columns_share_the_cores(local_pair: None) -> None:
    at = playground_page().run()
    at.multiselect(key="pg_engines").set_value(["llamacpp-4slot", "vllm-cpu"]).run()
    assert not at.exception, at.exception
    shown = _infos(at)
    assert "The 2 compared here answer at the same time" in shown
    assert "Also running here: sglang-cpu" in shown and "local down" in shown
