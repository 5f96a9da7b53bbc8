"""Issue 47's room: thirty followers drawing the same Playground exchange read it once per
change, not thirty times; a newly shown exchange is drawn once its first words are there."""

from __future__ import annotations

import threading

from services import playground
from services.engines import endpoints
from services.playground import EngineChoice, SendRequest, watching
from services.sessions import follow
from tests.support.scripted_server import ScriptedServer


def test_thirty_followers_read_a_streaming_exchange_once_per_change(
    db_url: str, scripted_server: ScriptedServer, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    follow.forget()
    for salt, name in enumerate(("left", "right")):
        endpoints.add_engine(
            name,
            scripted_server.base_url,
            model=scripted_server.model(ttft=300, itl=20, tokens=20, salt=salt),
        )
    reads: list[int] = []
    real = follow.get_exchange
    monkeypatch.setattr(follow, "get_exchange", lambda run_id: reads.append(run_id) or real(run_id))
    handle = playground.send(
        SendRequest(engines=(EngineChoice("left"), EngineChoice("right")), prompt="room")
    )
    waited: list[bool] = []
    texts: list[list[str]] = [[] for _ in range(30)]
    finals: list[playground.ExchangeView] = []
    versions: set[tuple[int, int] | None] = set()

    def follower(index: int) -> None:
        """As a follower's screen does: wait for the first words, draw, redraw at each change."""
        waited.append(follow.first_words(handle.run_id, 10.0))
        seen = -1
        while True:
            view = follow.exchange(handle.run_id)
            versions.add(watching.version(handle.run_id))
            texts[index].append(" ".join(c.answer for c in view.columns))
            if not view.active:
                finals.append(view)
                return
            seen = watching.growing(handle.run_id, seen, 1.0).version

    screens = [threading.Thread(target=follower, args=(i,)) for i in range(30)]
    for thread in screens:
        thread.start()
    for thread in screens:
        thread.join(30)
    assert not any(thread.is_alive() for thread in screens)
    assert waited == [True] * 30
    # The first words were there when each follower first drew the exchange.
    assert all(seen[0].strip() for seen in texts), [seen[0] for seen in texts]
    # One read per change the room saw (and per SHARED_READ_S after the end), not one per follower.
    assert len(reads) <= len(versions) + 2, (len(reads), len(versions))
    # Every follower ends on the exchange as stored, never on a read from before its end.
    stored = playground.get_exchange(handle.run_id)
    assert not stored.active
    assert all(view.columns == stored.columns for view in finals)


def test_a_finished_exchange_has_no_first_words_to_wait_for(db_url: str) -> None:
    from tests.services.sessions.conftest import stored_exchange

    run_id = stored_exchange()
    assert follow.first_words(run_id, 2.0) is False
