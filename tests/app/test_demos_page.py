"""The Demos page in AppTest: explains a scenario, refuses bad input without a traceback,
starts a demo, and replays a stored one from the database alone."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from services.demos import runner
from services.engines import endpoints
from tests.conftest import REPO_ROOT
from tests.services.demos.demo_server import DemoServer
from tests.support.forms import enter_submits
from tests.support.markdown import as_read


@pytest.fixture
def page(db_url: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("SHOOTOUT_NO_AUTOREFRESH", "1")
    return AppTest.from_file(str(REPO_ROOT / "app_pages" / "demos.py"), default_timeout=60)


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    with DemoServer() as demo_server:
        yield demo_server


def texts(at: AppTest) -> str:
    return as_read(
        " ".join(
            [m.value for m in at.markdown]
            + [c.value for c in at.caption]
            + [s.value for s in at.subheader]
        )
    )


def test_explains_the_scenario_without_engines(page: AppTest) -> None:
    at = page.run()
    assert not at.exception
    assert "An engine with a prefix cache keeps the KV cache" in texts(at)
    assert any("No engines registered yet" in i.value for i in at.info)
    at.selectbox(key="demo_scenario").set_value("decode-bound").run()
    assert not at.exception
    assert "roofline bound" in texts(at)


def test_bad_setting_is_a_clear_message(page: AppTest, server) -> None:  # type: ignore[no-untyped-def]
    server.register("page-engine")
    at = page.run()
    at.selectbox(key="demo_scenario").set_value("batching").run()
    at.text_input(key="demo_opt_batching_levels").set_value("1, lots")
    at.button[0].click().run()  # the form's submit button
    assert not at.exception
    assert any("Concurrency levels must be whole numbers" in e.value for e in at.error)
    assert runner.list_demos() == []


def test_enter_in_a_field_does_not_start_a_demo(page: AppTest, server) -> None:  # type: ignore[no-untyped-def]
    """A demo runs for minutes on shared engines: only "Run the demo" starts it, not Enter."""
    server.register("enter-engine")
    at = page.run()
    for scenario in ("batching", "decode-bound"):
        at.selectbox(key="demo_scenario").set_value(scenario).run()
        assert enter_submits(at) == {f"demo_form_{scenario}": False}


def test_run_then_replay(page: AppTest, server) -> None:  # type: ignore[no-untyped-def]
    server.register("page-cached", "ttft=200,itl=5", cache=0.5)
    at = page.run()
    at.multiselect(key="demo_engines_prefix-cache").set_value(["page-cached"])
    at.number_input(key="demo_opt_prefix-cache_prompt_tokens").set_value(150)
    at.number_input(key="demo_opt_prefix-cache_turns").set_value(2)
    at.button[0].click().run()
    assert not at.exception, at.exception
    run_id = at.session_state["demo_run_id"]
    view = runner.wait_until_done(run_id, timeout_s=60)
    assert view.status == "finished"

    # A fresh session replays it from the database, without the engine.
    endpoints.remove_engine("page-cached")
    replay = AppTest.from_file(str(REPO_ROOT / "app_pages" / "demos.py"), default_timeout=60)
    replay.query_params["run"] = str(run_id)
    replay.run()
    assert not replay.exception
    shown = texts(replay)
    assert "Conclusion, from the numbers above" in shown
    assert view.conclusion_headline in shown and "page-cached: TTFT fell from" in shown
    assert len(replay.get("plotly_chart")) == 2
    assert any(m.label == "page-cached · repeat" for m in replay.metric)
    # The report comes from the server's export route (web/exports.py), the demo's story first.
    assert [b.proto.url for b in replay.get("link_button")] == [f"export/runs/{run_id}.html"]
