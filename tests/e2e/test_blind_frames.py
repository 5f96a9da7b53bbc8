"""Issue 56 in Chromium: the blind rule covers what the browser receives, not only what it
shows. A blind exchange sent with top_k and min_tokens (so each answer carries a note about a
setting its engine does not take), opened at its address by another login and shown to a
session follower: neither page's HTML nor any websocket frame the browser received names an
engine of it (its registered name, its kind's words, its port or its model) before the vote,
and the follower's ballot asks for a confirmation before it counts."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app
from tests.support.scripted_server import ScriptedServer

pytestmark = pytest.mark.e2e

#: llama.cpp takes top_k but not min_tokens; an OpenAI-compatible server takes neither.
ENGINES = {"zebra-llama": "llamacpp", "yak-compat": "openai"}
#: What the other login's engine picker lists instead (the Playground needs two engines).
DECOYS = ("decoy-one", "decoy-two")


def _listen(page) -> list[bytes]:  # type: ignore[no-untyped-def]
    """Every websocket frame the page receives from now on, as bytes (Streamlit's are protobuf)."""
    frames: list[bytes] = []

    def on_socket(socket) -> None:  # type: ignore[no-untyped-def]
        socket.on(
            "framereceived",
            lambda payload: frames.append(payload if isinstance(payload, bytes) else payload.encode()),
        )

    page.on("websocket", on_socket)
    return frames


def _named(blob: bytes, words: list[bytes]) -> list[bytes]:
    return [word for word in words if word in blob]


def test_a_hidden_exchange_names_no_engine_in_html_or_websocket_frames(  # type: ignore[no-untyped-def]
    app_page, app_server, browser, browser_context_args, monkeypatch
) -> None:
    from db.session import dispose_all
    from services import sessions
    from services.engines import endpoints
    from services.playground import votes
    from services.sessions.records import Shown
    from services.team.access import Viewer

    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    dispose_all()
    with ScriptedServer() as server:
        models = {name: server.model(tokens=6, itl=1, salt=salt) for salt, name in enumerate(ENGINES)}
        words = [
            *(name.encode() for name in ENGINES),
            *(model.encode() for model in models.values()),
            b"llama.cpp",
            b"llamacpp",
            b"OpenAI-compatible",
            f":{server.port}".encode(),
        ]

        def register() -> None:
            for record in endpoints.list_engines():
                endpoints.remove_engine(record.name)
            for name, kind in ENGINES.items():
                endpoints.add_engine(name, server.base_url, kind=kind, model=models[name])
            dispose_all()

        register()
        sender = app_page
        sender.goto(app_server.url)
        wait_for_app(sender)
        sender.locator("[data-testid='stExpander'] summary", has_text="Parameters").click()
        sender.locator(".st-key-pg_top_k input").fill("40")
        sender.locator(".st-key-pg_top_k input").press("Enter")
        wait_for_app(sender)
        sender.locator(".st-key-pg_min_tokens input").fill("2")
        sender.locator(".st-key-pg_min_tokens input").press("Enter")
        wait_for_app(sender)
        sender.locator(".st-key-pg_blind label").click()
        wait_for_app(sender)
        sender.locator(".st-key-pg_prompt textarea").fill("Which of you wrote this?")
        sender.locator(".st-key-pg_send button").click()
        sender.wait_for_url("**exchange=*")
        sender.get_by_text("Which answer is best?").wait_for(timeout=60_000)
        run_id = int(sender.url.rsplit("exchange=", 1)[1].split("&")[0])
        # The sender's own panes: their notes say "Answer B's engine", never its kind.
        panes = sender.locator("[data-testid='stColumn']").filter(has_text="does not take")
        assert panes.count() == 2, panes.count()
        said = " ".join(panes.nth(i).inner_text() for i in range(2))
        assert "does not take top_k, min_tokens: not sent." in said, said
        assert not _named(said.encode(), words), said
        screenshot(sender, "blind-notes-sender")

        # Another login opens it at its address. Its picker lists the registered engines, so
        # the exchange's own are taken out of the registry first: any trace of them is a leak.
        for name in ENGINES:
            endpoints.remove_engine(name)
        for name in DECOYS:
            endpoints.add_engine(name, "http://127.0.0.1:9/v1")
        dispose_all()
        other = browser.new_context(**browser_context_args).new_page()
        other.set_default_timeout(60_000)
        try:
            frames = _listen(other)
            other.goto(f"{app_server.url}/playground?exchange={run_id}")
            wait_for_app(other)
            other.get_by_text("Compare answers").wait_for()
            other.get_by_text("does not take top_k").first.wait_for()
            assert_no_exception(other)
            screenshot(other, "blind-notes-other-login")
            received = b"".join(frames)
            assert b"Answer A" in received and b"does not take" in received  # frames read
            assert not _named(received, words), _named(received, words)
            html = other.content().encode()
            assert not _named(html, words), _named(html, words)
        finally:
            other.context.close()

        # A session follower, with the exchange's engines registered again.
        register()
        info, presenter = sessions.start(
            Viewer(role="operator", identity="local"), "presenter-tab", "Blind"
        )
        sessions.publish(presenter, Shown(kind="exchange", run_ids=(run_id,)))
        follower = browser.new_context(**browser_context_args).new_page()
        follower.set_default_timeout(60_000)
        try:
            frames = _listen(follower)
            follower.goto(f"{app_server.url}/session?join={info.join_code}")
            follower.get_by_text("Which answer is best?").first.wait_for()
            ballot = follower.locator(f".st-key-session_vote_{run_id}_A button")
            ballot.wait_for()
            assert_no_exception(follower)
            # A click only picks: the vote waits for its confirmation.
            ballot.click()
            follower.locator(f".st-key-session_vote_confirm_{run_id} button").wait_for()
            # In place of the ballot: its buttons do not linger under the screen's waiting run.
            follower.locator(f".st-key-session_vote_{run_id}_A").wait_for(state="detached")
            assert votes.votes_for(run_id) == []
            screenshot(follower, "blind-follower-confirm")
            received = b"".join(frames)
            assert b"Answer A" in received and b"does not take" in received
            assert not _named(received, words), _named(received, words)
            html = follower.content().encode()
            assert not _named(html, words), _named(html, words)
        finally:
            follower.context.close()
            for record in endpoints.list_engines():
                endpoints.remove_engine(record.name)
            dispose_all()
