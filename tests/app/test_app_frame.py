"""The frame (app.py): navigation to every page, and the shared password gate."""

from __future__ import annotations

from datetime import UTC

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO_ROOT

APP = str(REPO_ROOT / "app.py")


def test_default_page_renders(db_url: str) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "Playground"


def test_a_configured_login_shows_nothing_without_the_gates_cookie(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Logins happen in front of Streamlit (web/gate.py); the script itself never offers a
    password form, so `streamlit run app.py` with a password set shows no page at all."""
    monkeypatch.setenv("SHOOTOUT_PASSWORD", "s3cret-team")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Shootout"]  # no page behind the gate
    assert any("serve.py" in e.value for e in at.error)
    assert not at.text_input  # and no password field to guess at


def test_a_viewer_sees_no_operator_controls(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No login configured, a client from another host: a viewer (the loopback user is the operator)."""
    from services.engines import endpoints
    from services.team import access

    endpoints.add_engine("a", "http://127.0.0.1:9", kind="vllm", model="m")
    monkeypatch.setattr(
        access, "anonymous_viewer", lambda address: access.Viewer("viewer", "ip:10.0.0.5")
    )
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "engines.py"), default_timeout=60).run()
    assert not at.exception
    labels = [getattr(b, "label", "") for b in at.get("button")]
    assert (
        "Probe and add" not in labels
        and "Start all local engines" not in labels
        and "Remove" not in labels
    )
    assert "Probe" in labels  # watching is allowed
    assert any(
        "Only an operator may start, stop, add, edit or remove engines" in c.value for c in at.caption
    )
    monkeypatch.setattr(access, "anonymous_viewer", lambda address: access.Viewer("operator", "local"))
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "engines.py"), default_timeout=60).run()
    assert "Probe and add" in [getattr(b, "label", "") for b in at.get("button")]


def test_app_start_marks_stale_runs_interrupted(db_url: str) -> None:
    from datetime import datetime, timedelta

    from db.models import Run
    from db.session import session_scope

    with session_scope() as session:
        run = Run(
            kind="recording",
            status="running",
            heartbeat_at=datetime.now(UTC) - timedelta(hours=1),
        )
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

    settings = tomllib.loads(
        (Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text()
    )
    assert settings["runner"]["postScriptGC"] is False
    assert settings["client"]["toolbarMode"] == "viewer"  # no Deploy button or developer menu
    assert settings["server"]["fileWatcherType"] == "none"


def test_the_sidebar_stays_on_a_page_that_stops_early(db_url: str) -> None:
    """Benchmarks with no run yet ends with st.stop(): the frame's sidebar is drawn all the same."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/benchmarks.py").run()
    assert not at.exception
    assert any("No benchmark has run yet." in c.value for c in at.caption)
    assert any("0 engine(s) registered" in c.value for c in at.sidebar.caption)


def test_the_frame_gives_pages_the_screens_width(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36: at 1400 px a third of the screen went to an almost empty sidebar and wide
    margins while wide tables were cut at the right: the wide layout, a narrow sidebar, 2rem margins."""
    import streamlit as st

    configs: list[dict] = []
    set_page_config = st.set_page_config
    monkeypatch.setattr(st, "set_page_config", lambda **kw: configs.append(kw) or set_page_config(**kw))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert configs and {c.get("layout") for c in configs} == {"wide"}
    styles = [h.proto.body for h in at.get("html")]
    assert any(
        'section[data-testid="stSidebar"]{width:15rem' in s and "padding-left:2rem" in s for s in styles
    ), styles
