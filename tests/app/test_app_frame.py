"""The frame (app.py): navigation to every page, and the shared password gate."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO_ROOT

APP = str(REPO_ROOT / "app.py")


def test_default_page_renders(db_url: str) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "Playground"


def test_password_gate(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_PASSWORD", "s3cret-team")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Shootout"]  # no page behind the gate
    at.text_input(key="auth_password").set_value("wrong").run()
    assert any("Wrong password" in e.value for e in at.error)
    assert [t.value for t in at.title] == ["Shootout"]
    at.text_input(key="auth_password").set_value("s3cret-team").run()
    assert not at.exception
    assert "Playground" in [t.value for t in at.title]


def test_app_start_marks_stale_runs_interrupted(db_url: str) -> None:
    from datetime import datetime, timedelta, timezone

    from db.models import Run
    from db.session import session_scope

    with session_scope() as session:
        run = Run(kind="recording", status="running", heartbeat_at=datetime.now(timezone.utc) - timedelta(hours=1))
        session.add(run)
        session.flush()
        run_id = run.id
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    with session_scope() as session:
        assert session.get(Run, run_id).status == "interrupted"


def test_streamlit_settings_leave_the_playground_reader_alone() -> None:
    """The Playground reads its streams in a thread of the app's process. Streamlit's default
    full gc.collect() after every script and fragment run held the GIL for hundreds of ms and
    delayed the chunks' timestamps (three engines showed the same TTFT); the file watcher took a
    quarter of the GIL time while streaming. Both stay off in the project's settings."""
    import tomllib
    from pathlib import Path

    settings = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    assert settings["runner"]["postScriptGC"] is False
    assert settings["client"]["toolbarMode"] == "viewer"  # no Deploy button or developer menu
    assert settings["server"]["fileWatcherType"] == "none"
