"""The Parity page in AppTest: explains itself without engines, refuses bad input with a
clear message, and shows a stored run (summary, per-prompt table, the diff at the divergence)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from services.engines import endpoints
from services.parity import results as views
from services.parity import runner
from services.parity.tasks import task_set
from tests.conftest import REPO_ROOT
from tests.support.forms import enter_submits


@pytest.fixture
def page(db_url: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("SHOOTOUT_NO_AUTOREFRESH", "1")
    return AppTest.from_file(str(REPO_ROOT / "app_pages" / "parity.py"), default_timeout=60)


def test_without_engines_it_says_where_to_add_them(page: AppTest) -> None:
    at = page.run()
    assert not at.exception
    assert any("No engines registered yet" in i.value for i in at.info)


def test_one_engine_is_a_clear_message(page: AppTest, scripted_server) -> None:  # type: ignore[no-untyped-def]
    endpoints.add_engine("solo", scripted_server.base_url, model=scripted_server.model(tokens=6))
    at = page.run()
    at.multiselect(key="parity_engines").set_value(["solo"])
    at.button[0].click().run()  # the form's submit button
    assert not at.exception
    assert any("compares 2 to 6 engines" in e.value for e in at.error)
    assert views.list_parity_runs() == []


def test_enter_in_a_field_does_not_start_a_run(page: AppTest) -> None:
    """Only the "Run parity" button starts a run (issue 36: Enter started two; the browser
    test in tests/e2e/test_parity.py presses it)."""
    endpoints.add_engine("enter-a", "http://127.0.0.1:9/v1")
    at = page.run()
    assert enter_submits(at) == {"parity_form": False}


def test_the_form_starts_with_vllm_and_another_engine(page: AppTest) -> None:
    for name, kind in (
        ("llamacpp-1slot", "llamacpp"),
        ("llamacpp-4slot", "llamacpp"),
        ("vllm-cpu", "vllm"),
    ):
        endpoints.add_engine(name, f"http://127.0.0.1:9/{name}", kind=kind)
    at = page.run()
    assert not at.exception
    assert at.multiselect(key="parity_engines").value == ["vllm-cpu", "llamacpp-1slot"]
    assert at.selectbox(key="parity_reference").value == "vllm-cpu"


def test_a_stored_run_shows_its_summary_table_and_divergence(page: AppTest, scripted_server) -> None:  # type: ignore[no-untyped-def]
    endpoints.add_engine("words-a", scripted_server.base_url, model=scripted_server.model(tokens=8))
    endpoints.add_engine(
        "words-b", scripted_server.base_url, model=scripted_server.model(tokens=8, salt=3)
    )
    run_id = runner.start_parity(
        ["words-a", "words-b"], tasks=task_set(3), max_tokens=8, background=False
    )
    page.query_params["run"] = str(run_id)
    at = page.run()
    assert not at.exception
    assert at.subheader[0].value.startswith(f"Run #{run_id}")
    summary = at.dataframe[0].value
    assert list(summary["Engine"]) == ["words-a (reference)", "words-b"]
    assert summary["Log-probabilities"].iloc[1] == "not reported by OpenAI-compatible"
    assert summary["Exact match"].iloc[1] == "0%"
    at.toggle(key="parity_only_diverged").set_value(True).run()
    assert not at.exception
    assert len(at.dataframe[1].value) == 3
    assert any("First divergence at word" in m.value for m in at.markdown)
