"""Publishing what the presenter shows, the followers' poll, following or not, presence."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from sqlalchemy import update

from db.models import SessionParticipant
from db.session import session_scope
from services import sessions
from services.core.errors import ValidationError
from services.sessions import Shown, live
from tests.services.sessions.conftest import Room


def test_followers_see_what_the_presenter_shows(room: Room) -> None:
    assert sessions.poll(room.followers[0]).shown is None
    seq = sessions.publish(room.presenter, Shown(kind="exchange", run_ids=(7,)))
    state = sessions.poll(room.followers[0])
    assert (state.seq, state.shown, state.title, state.ended) == (
        seq,
        Shown(kind="exchange", run_ids=(7,)),
        "Friday demo",
        False,
    )


def test_showing_the_same_thing_again_adds_nothing(room: Room) -> None:
    first = sessions.publish(room.presenter, Shown(kind="run", run_ids=(3,)))
    assert sessions.publish(room.presenter, Shown(kind="run", run_ids=(3,))) == first
    assert (
        sessions.publish(room.presenter, Shown(kind="compare", run_ids=(3, 4), baseline="4:vllm"))
        == first + 1
    )
    assert len(sessions.timeline(room.info.id)) == 2


def test_a_follower_cannot_act_as_the_presenter(room: Room) -> None:
    for act in (
        lambda: sessions.publish(room.followers[0], Shown(kind="run", run_ids=(1,))),
        lambda: sessions.note(room.followers[1], "I present now"),
        lambda: sessions.end(room.followers[0]),
    ):
        with pytest.raises(sessions.NotPresenter):
            act()
    assert sessions.state(room.info.id).shown is None and sessions.timeline(room.info.id) == []


def test_notes_go_to_the_timeline_not_to_the_screens(room: Room) -> None:
    sessions.publish(room.presenter, Shown(kind="exchange", run_ids=(2,)))
    sessions.note(room.presenter, "  vLLM answers first here  ")
    assert sessions.state(room.info.id).shown == Shown(kind="exchange", run_ids=(2,))
    assert sessions.timeline(room.info.id)[-1].label == "Note: vLLM answers first here"
    with pytest.raises(ValidationError):
        sessions.note(room.presenter, "   ")


def test_nothing_is_published_after_the_end(room: Room) -> None:
    sessions.end(room.presenter)
    with pytest.raises(sessions.SessionEnded):
        sessions.publish(room.presenter, Shown(kind="run", run_ids=(1,)))


def test_stop_and_resume_following_and_the_count(room: Room) -> None:
    a = room.followers[0]
    assert sessions.presence(room.info.id).following == 2
    sessions.set_following(a, False)
    assert not sessions.is_following(a) and sessions.presence(room.info.id).following == 1
    sessions.set_following(a, True)
    assert sessions.is_following(a) and sessions.presence(room.info.id).following == 2


def test_a_follower_not_seen_for_a_while_no_longer_counts(room: Room) -> None:
    a = room.followers[0]
    long_ago = datetime.now(UTC) - timedelta(seconds=live.AWAY_AFTER_S + 5)
    with session_scope() as db:
        db.execute(update(SessionParticipant).values(last_seen_at=long_ago))
    assert sessions.presence(room.info.id).following == 0
    sessions.poll(a)  # its first poll in this process says "still here"
    assert sessions.presence(room.info.id).following == 1


def test_a_room_s_polls_share_reads_and_writes(room: Room, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    writes: list[set[str]] = []
    real_state = live.state
    monkeypatch.setattr(
        live, "state", lambda session_id: reads.append(session_id) or real_state(session_id)
    )
    monkeypatch.setattr(
        live, "_mark_seen", lambda session_id, hashes, following=None: writes.append(set(hashes))
    )
    for _ in range(10):
        for seat in room.followers:
            sessions.poll(seat)
    assert len(reads) == 1  # within SHARED_READ_S, one read serves every follower here
    assert writes == [{room.followers[0].identity_hash}]  # the first poll; the rest wait their turn
    monkeypatch.setattr(live, "_flushed", {room.info.id: float("-inf")})
    sessions.poll(room.followers[0])
    assert writes[-1] == {f.identity_hash for f in room.followers}  # one write for the whole room


def test_a_poll_sees_what_is_published_here_at_once(room: Room) -> None:
    assert sessions.poll(room.followers[0]).shown is None
    sessions.publish(room.presenter, Shown(kind="run", run_ids=(9,)))
    assert sessions.poll(room.followers[1]).shown == Shown(kind="run", run_ids=(9,))


def test_stored_references_read_leniently() -> None:
    assert Shown.from_json({"kind": "nonsense"}) is None
    assert Shown.from_json(["run"]) is None
    assert Shown.from_json(
        {"kind": "run", "run_ids": [1, "x"], "step": "2", "inputs": [["a", 1], "bad"]}
    ) == Shown(kind="run", run_ids=(1,), inputs=(("a", "1"),))


def test_a_publish_here_wakes_the_waiting_screens_at_once(room: Room) -> None:
    seq = sessions.poll(room.followers[0]).seq
    woke: list[tuple[float, int]] = []

    def wait(seat: sessions.Seat) -> None:
        began = time.monotonic()
        found = live.wait_for_change(seat, seq, timeout_s=10.0)
        woke.append((time.monotonic() - began, found.seq))

    screens = [threading.Thread(target=wait, args=(seat,)) for seat in room.followers]
    for thread in screens:
        thread.start()
    time.sleep(0.3)
    published = sessions.publish(room.presenter, Shown(kind="run", run_ids=(5,)))
    for thread in screens:
        thread.join(5)
    assert [found for _, found in woke] == [published, published]
    assert all(0.3 <= waited < 1.0 for waited, _ in woke), woke  # woken, not timed out


def test_a_screen_with_nothing_new_waits_its_timeout(room: Room) -> None:
    seq = sessions.poll(room.followers[0]).seq
    began = time.monotonic()
    assert live.wait_for_change(room.followers[0], seq, timeout_s=0.3).seq == seq
    assert 0.3 <= time.monotonic() - began < 1.0


def test_an_idle_room_reads_less_often_until_the_next_change(
    room: Room, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(live, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    reads: list[int] = []
    real_state = live.state
    monkeypatch.setattr(
        live, "state", lambda session_id: reads.append(session_id) or real_state(session_id)
    )

    def reads_over(seconds: float) -> int:
        """The room's reads while its two followers poll every 0.1 s for `seconds`."""
        before = len(reads)
        for _ in range(round(seconds / 0.1)):
            clock[0] += 0.1
            for seat in room.followers:
                sessions.poll(seat)
        return len(reads) - before

    # Just changed (the room's first read): one read per SHARED_READ_S for IDLE_AFTER_S.
    assert 4 <= reads_over(1.0) <= 6
    reads_over(live.IDLE_AFTER_S)
    assert reads_over(4.0) <= 3  # idle: one read per IDLE_READ_S
    sessions.publish(room.presenter, Shown(kind="run", run_ids=(6,)))
    assert 4 <= reads_over(1.0) <= 6  # a change: back to SHARED_READ_S
