"""The Tune page in AppTest: a viewer watches but cannot start; bad grid input gives one clear
error; a stored run's address shows its table and winner."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from services.team import access
from services.tune import jobs
from services.tune.spec import TuneSpec
from tests.conftest import REPO_ROOT
from tests.support.markdown import as_read


def page(viewer: access.Viewer | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "tune.py"), default_timeout=60)
    if viewer is not None:
        at.session_state["viewer"] = viewer
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def texts(at: AppTest) -> str:
    return " ".join(
        as_read(e.value)
        for kind in ("markdown", "caption", "info", "error", "warning", "success", "subheader")
        for e in getattr(at, kind)
    )


def test_a_viewer_cannot_start_a_tuning_run(db_url: str) -> None:
    at = page(access.Viewer(role="viewer", identity="v@example.com"))
    assert not at.exception
    assert "Only an operator may start, stop, add, edit or remove engines" in texts(at)
    assert not [b for b in at.button if b.key == "tune_start"]


def test_bad_grid_input_shows_one_clear_error(db_url: str) -> None:
    at = page(access.Viewer(role="operator", identity="op"))
    at.text_area(key="tune_grid").set_value("np=1,lots").run()
    at.button(key="tune_start").click().run()
    assert not at.exception
    assert [as_read(e.value) for e in at.error] == ["Setting np: expected a whole number, got 'lots'."]
    assert "Command templates (remote or containerised engines) are off on this server" in texts(at)


def test_a_stored_run_shows_its_configurations_and_winner(db_url: str) -> None:
    run_id = jobs.create_run(TuneSpec(grid={"np": ("1", "2")}), trusted=False)
    jobs.cancel_run(run_id)
    at = page(run=str(run_id))
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["configuration"]) == ["np=1", "np=2"]
    assert "No configuration completed a request." in texts(at)
