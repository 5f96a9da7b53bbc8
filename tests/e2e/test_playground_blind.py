"""Issue 36 item 1 in Chromium: a blind exchange stays blind at its own address. Sent blind in one
browser, then opened at /playground?exchange=N in a fresh browser context (a shared link, a
reload), it names no engine against an answer until its vote is cast."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app
from tests.support.scripted_server import ScriptedServer

pytestmark = pytest.mark.e2e

ENGINES = ("blind-east", "blind-west")


def test_a_blind_exchange_reopened_at_its_address_names_no_engine(  # type: ignore[no-untyped-def]
    app_page, app_server, browser, browser_context_args, monkeypatch
) -> None:
    from db.session import dispose_all
    from services.engines import endpoints

    with ScriptedServer() as server:
        monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
        for record in endpoints.list_engines():
            endpoints.remove_engine(record.name)
        for salt, name in enumerate(ENGINES):
            endpoints.add_engine(name, server.base_url, model=server.model(tokens=6, itl=1, salt=salt))
        dispose_all()
        page = app_page
        page.goto(app_server.url)
        wait_for_app(page)
        page.locator(".st-key-pg_blind label").click()
        wait_for_app(page)
        page.locator(".st-key-pg_prompt textarea").fill("Which of you wrote this?")
        page.locator(".st-key-pg_send button").click()
        page.wait_for_url("**exchange=*")
        page.get_by_text("Which answer is best?").wait_for(timeout=60_000)
        address = page.url

        fresh = browser.new_context(**browser_context_args)
        try:
            other = fresh.new_page()
            other.set_default_timeout(60_000)
            other.goto(address)
            wait_for_app(other)
            other.get_by_text("Compare answers").wait_for()
            assert_no_exception(other)
            main = other.locator("[data-testid='stMain']").inner_text()
            # Recent exchanges lists which engines took part, never who wrote which answer.
            recent = (
                other.locator("[data-testid='stExpander']")
                .filter(has_text="Recent exchanges")
                .inner_text()
            )
            # So does the engine picker (the next turn's engines): a set, not who wrote what.
            picker = other.locator(".st-key-pg_engines").inner_text()
            shown = main.replace(recent, "").replace(picker, "")
            wait_for_app(other)
            screenshot(other, "playground-blind-reopened")
            assert "Answer A" in shown and "Answer B" in shown
            assert not [name for name in ENGINES if name in shown], shown
            assert "First token" not in shown and "fastest decode" not in shown
            assert "only in Answer" in shown  # the diff legend names the answers, not the engines
        finally:
            fresh.close()
            for name in ENGINES:
                endpoints.remove_engine(name)
            dispose_all()
