"""Issue 34 in Chromium, three browser contexts: a presenter starts a session, two followers
join by its link; the presenter's Playground exchange streams on the followers' screens; one
follower stops following (and no longer sees what the presenter opens), then follows again;
a reload of the presenter's tab and a follower's fresh visit keep their seats.

The app runs with timed refresh on (the shared browser-test app has it off): following live is
a follower's screen that a timer starts and that then waits in place for the presenter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app
from tests.support.scripted_server import ScriptedServer
from tests.support.served import Served, start_served_app, stop

pytestmark = pytest.mark.e2e

ENGINES = ("room-east", "room-west")


@pytest.fixture(scope="module")
def live_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    data_dir = tmp_path_factory.mktemp("e2e-session")
    served = start_served_app(data_dir, {"SHOOTOUT_NO_AUTOREFRESH": "0"})
    yield served, data_dir
    stop(served)


def main_text(page) -> str:  # type: ignore[no-untyped-def]
    return page.locator("[data-testid='stMain']").inner_text()


def send(page, prompt: str) -> None:  # type: ignore[no-untyped-def]
    page.locator(".st-key-pg_prompt textarea").fill(prompt)
    page.locator(".st-key-pg_send button").click()
    page.wait_for_url("**exchange=*")


def test_followers_see_the_presenter_s_exchange_and_stop_and_resume(  # type: ignore[no-untyped-def]
    browser, browser_context_args, live_app, monkeypatch
) -> None:
    from db.session import dispose_all
    from services import sessions
    from services.engines import endpoints

    served, data_dir = live_app
    url = served.url
    contexts = [browser.new_context(**browser_context_args) for _ in range(3)]
    presenter, east, west = (context.new_page() for context in contexts)
    for page in (presenter, east, west):
        page.set_default_timeout(60_000)
    with ScriptedServer() as server:
        monkeypatch.setenv("SHOOTOUT_DATABASE_URL", f"sqlite:///{data_dir / 'shootout.db'}")
        monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(data_dir))
        for salt, name in enumerate(ENGINES):
            # About six seconds of tokens: long enough to see the answer arrive on a follower.
            endpoints.add_engine(
                name, server.base_url, model=server.model(tokens=60, itl=100, salt=salt)
            )

        presenter.goto(f"{url}/session")
        wait_for_app(presenter)
        presenter.locator(".st-key-session_title input").fill("Friday demo")
        presenter.locator(".st-key-session_title input").press("Enter")
        wait_for_app(presenter)
        presenter.locator(".st-key-session_start button").click()
        presenter.get_by_text("Presenting: Friday demo").wait_for()
        code = sessions.list_sessions()[0].join_code
        assert code in main_text(presenter)
        # The QR code (its element's code loads lazily: wait for it rather than count at once).
        presenter.locator("[data-testid='stImage']").first.wait_for()
        screenshot(presenter, "session-presenter")

        for follower in (east, west):
            follower.goto(f"{url}/session?join={code}")
            wait_for_app(follower)
            follower.get_by_text("The presenter has shown nothing yet").wait_for()

        # The presenter goes to the Playground inside the app (the tab keeps its seat) and sends.
        presenter.get_by_role("link", name="Playground", exact=True).filter(visible=True).first.click()
        presenter.locator(".st-key-pg_prompt textarea").wait_for()
        send(presenter, "Colours of the sky, please.")
        for follower in (east, west):
            follower.get_by_text("Colours of the sky, please.").wait_for(timeout=30_000)
        # Streaming on the follower: answer text arrives before the exchange has finished.
        east.wait_for_function(
            "() => [...document.querySelectorAll('p')].some(p => p.innerText.trim().startsWith('streaming'))",
            timeout=30_000,
        )
        for follower in (east, west):
            follower.wait_for_function(
                "() => [...document.querySelectorAll('p')].filter(p => p.innerText.trim() === 'finished')"
                ".length >= 2",
                timeout=60_000,
            )
            text = main_text(follower)
            assert all(name in text for name in ENGINES) and "TTFT" in text
            assert follower.locator(".st-key-pg_send").count() == 0  # read-only: no Send here
            assert_no_exception(follower)
        screenshot(east, "session-follower-exchange")

        # West stops following; the presenter's next exchange reaches east only.
        west.locator(".st-key-session_unfollow button").click()
        west.get_by_text("You stopped following").wait_for()
        assert sessions.presence(sessions.list_sessions()[0].id).following == 1
        presenter.locator(".st-key-pg_new button").click()
        send(presenter, "And of the sea?")
        east.get_by_text("And of the sea?").wait_for(timeout=30_000)
        west.wait_for_timeout(3_000)
        assert "And of the sea?" not in main_text(west)

        west.locator(".st-key-session_follow button").click()
        west.get_by_text("And of the sea?").wait_for(timeout=30_000)
        assert sessions.presence(sessions.list_sessions()[0].id).following == 2
        assert_no_exception(west)

        # A reload loses the tab's state, not the seat (the gate's browser cookie): the follower
        # opening /session anew follows at once, and the presenter still presents.
        east.goto(f"{url}/session")
        wait_for_app(east)
        east.get_by_text("And of the sea?").wait_for(timeout=30_000)
        assert "Live: this screen follows the presenter" in main_text(east)
        # The screen's run lasts while it waits in place: the header says nothing of it (no
        # "Running…" with a Stop button for as long as the room follows).
        # Read in one step in the page (the run may end and start again between two reads): the
        # running icon is there, and hidden.
        east.wait_for_function(
            """() => {
                const icon = document.querySelector('[data-testid="stStatusWidgetRunningIcon"]');
                return icon !== null && getComputedStyle(icon).visibility === 'hidden';
            }""",
            timeout=15_000,
        )
        east.wait_for_timeout(1_000)
        assert not east.get_by_test_id("stStatusWidgetRunningIcon").is_visible()  # still unsaid
        presenter.reload()
        wait_for_app(presenter)
        presenter.get_by_text("Presenting session").wait_for()

        # Back on the Session page the presenter sees the room and the timeline.
        presenter.get_by_role("link", name="Session", exact=True).filter(visible=True).first.click()
        presenter.get_by_text("Presenting: Friday demo").wait_for()
        presenter.get_by_text("Following now").wait_for()
        presenter.get_by_text("Timeline").wait_for()
        screenshot(presenter, "session-presenter-timeline")
        assert_no_exception(presenter)
        dispose_all()
    for context in contexts:
        context.close()
