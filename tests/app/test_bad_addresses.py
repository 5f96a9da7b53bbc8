"""Issue 44, item 15, on the pages: an address naming a 20-digit id (or letters) gets one line
saying so, never a traceback (it used to reach the database: SQLite's OverflowError)."""

from __future__ import annotations

import tomllib

import pytest
from streamlit.testing.v1 import AppTest

from db.models import Run
from db.session import session_scope
from services.engines.endpoints import add_engine
from tests.conftest import REPO_ROOT

HUGE = "9" * 20


@pytest.fixture
def stored_runs(db_url: str) -> None:
    """What the pages need before they read an address: a run to list, engines to send to."""
    with session_scope() as session:
        for kind in ("benchmark", "tune"):
            session.add(Run(kind=kind, name=f"a {kind}", status="finished", config={}, summary={}))
    for name in ("one", "two"):  # the Playground reads its address once it has engines
        add_engine(name, "http://127.0.0.1:9", kind="vllm", model="m")


@pytest.mark.parametrize(
    ("page", "query", "words"),
    [
        ("benchmarks", {"run": HUGE}, f"'{HUGE}' is not a run number."),
        ("tune", {"run": HUGE}, f"'{HUGE}' is not a run number."),
        ("runs", {"run": HUGE}, f"'{HUGE}' is not a run number."),
        ("runs", {"compare": f"1,{HUGE}"}, f"'{HUGE}' is not a run number."),
        ("playground", {"exchange": HUGE}, "which is not an exchange number"),
        ("demos", {"run": HUGE}, f"'{HUGE}' is not a run number."),
        ("parity", {"run": HUGE}, f"'{HUGE}' is not a run number."),
        ("session", {"session": HUGE}, f"'{HUGE}' is not a session number."),
        ("demos", {"run": "abc"}, "'abc' is not a run number."),
    ],
)
def test_an_address_with_an_impossible_id_is_one_line_not_a_traceback(
    stored_runs: None, page: str, query: dict[str, str], words: str
) -> None:
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / f"{page}.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any(words in error for error in errors), errors


def test_the_served_app_shows_no_error_details_to_anyone() -> None:
    """Streamlit's own notice for an error nobody foresaw: no message, no traceback, no paths."""
    config = tomllib.loads((REPO_ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"
