"""The frame's session hook in AppTest (the whole app.py): a presenting tab's pages send what
their address shows to the room; the Planner sends its inputs; a follower's pages send nothing."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from services import sessions
from tests.conftest import REPO_ROOT
from tests.services.sessions.conftest import stored_exchange

APP = str(REPO_ROOT / "app.py")


def open_page(at: AppTest, page: str, **params: str) -> AppTest:
    for key in list(at.query_params):
        del at.query_params[key]
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def test_what_the_presenter_opens_reaches_the_room(db_url: str) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    open_page(at, "session")
    next(b for b in at.button if b.label == "Start session").click().run()
    live = sessions.list_sessions()[0]
    assert any("Presenting session" in c.value for c in at.sidebar.caption)

    exchange = stored_exchange()
    open_page(at, "runs", run=str(exchange))
    assert sessions.state(live.id).shown == sessions.Shown(kind="exchange", run_ids=(exchange,))
    open_page(at, "runs", compare=f"{exchange},{exchange + 1}")
    assert sessions.state(live.id).shown == sessions.Shown(
        kind="compare", run_ids=(exchange, exchange + 1)
    )
    open_page(at, "planner")
    shown = sessions.state(live.id).shown
    assert shown is not None and shown.kind == "planner" and dict(shown.inputs)["model"] == "llama-3-8b"
    assert [e.shown.kind for e in sessions.timeline(live.id)] == ["exchange", "compare", "planner"]


def test_a_follower_s_pages_send_nothing(db_url: str) -> None:
    from services.team.access import Viewer

    info, _ = sessions.start(Viewer(role="operator", identity="local"), "presenter-tab", "")
    at = AppTest.from_file(APP, default_timeout=60).run()
    open_page(at, "session", join=info.join_code)
    assert any("Following session" in c.value for c in at.sidebar.caption)
    open_page(at, "runs", run=str(stored_exchange()))
    assert sessions.state(info.id).shown is None


def test_a_reloaded_tab_takes_its_seat_back(db_url: str) -> None:
    """A reload is a new tab state for the same person (in the browser, the gate's cookie; here
    the same browser id): the presenter presents again and what they open reaches the room;
    someone in no session sees no session."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["vote_browser_id"] = "one-browser"
    at.run()
    open_page(at, "session")
    next(b for b in at.button if b.label == "Start session").click().run()
    live = sessions.list_sessions()[0]

    reloaded = AppTest.from_file(APP, default_timeout=60)
    reloaded.session_state["vote_browser_id"] = "one-browser"
    reloaded.run()
    assert any("Presenting session" in c.value for c in reloaded.sidebar.caption)
    exchange = stored_exchange()
    open_page(reloaded, "runs", run=str(exchange))
    assert sessions.state(live.id).shown == sessions.Shown(kind="exchange", run_ids=(exchange,))

    stranger = AppTest.from_file(APP, default_timeout=60).run()
    assert not any("session" in c.value.lower() for c in stranger.sidebar.caption)
