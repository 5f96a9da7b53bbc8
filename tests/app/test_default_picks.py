"""The comparing pages start with the same engines (issue 47: the Playground took the first
three by name, Parity vLLM and SGLang, Benchmarks none)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from services.engines.endpoints import add_engine
from tests.app.test_benchmarks_page import page as benchmarks_page
from tests.app.test_playground_page import page as playground_page
from tests.conftest import REPO_ROOT


def test_playground_benchmarks_and_parity_start_with_the_same_pair(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOOTOUT_NO_AUTOREFRESH", "1")  # Parity's page, as its own tests run it
    for name, kind in (
        ("llamacpp-1slot", "llamacpp"),
        ("llamacpp-4slot", "llamacpp"),
        ("sglang-cpu", "sglang"),
        ("vllm-cpu", "vllm"),
    ):
        # Not local: whether the suite's own local engines answer yet is not this test's.
        add_engine(name, "http://127.0.0.1:9/v1", kind=kind)
    pair = ["vllm-cpu", "sglang-cpu"]
    playground = playground_page().run()
    # Three columns there, the pair among them, in the registry's (name) order.
    picked = playground.multiselect(key="pg_engines").value
    assert not playground.exception and set(pair) <= set(picked) and len(picked) == 3
    bench = benchmarks_page()
    assert not bench.exception and bench.multiselect(key="bench_engines").value == pair
    parity = AppTest.from_file(str(REPO_ROOT / "app_pages" / "parity.py"), default_timeout=60).run()
    assert not parity.exception and parity.multiselect(key="parity_engines").value == pair
