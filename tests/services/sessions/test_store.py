"""Starting, joining, handing over and ending sessions; who may present."""

from __future__ import annotations

import pytest

from services import sessions
from services.core.errors import NotFoundError, ValidationError
from services.sessions import codes
from services.team.access import PermissionDenied, Viewer
from services.votes.participants import participant_key
from tests.services.sessions.conftest import OPERATOR, ROOM, Room


def test_a_join_code_is_short_and_unambiguous(room: Room) -> None:
    code = room.info.join_code
    assert codes.well_formed(code)
    assert not set(code) & set("0O1IL2Z5S8B6GUV")
    assert sessions.by_code(f" {code[:2].lower()}-{code[2:]} ").id == room.info.id


def test_codes_are_unique_among_live_sessions(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    picks = iter(["AAAAA", "AAAAA", "CCCCC"])
    monkeypatch.setattr(codes, "new_code", lambda: next(picks))
    first, seat = sessions.start(OPERATOR, "t1")
    second, _ = sessions.start(OPERATOR, "t2")
    assert (first.join_code, second.join_code) == ("AAAAA", "CCCCC")
    sessions.end(seat)
    monkeypatch.setattr(codes, "new_code", lambda: "AAAAA")
    assert sessions.start(OPERATOR, "t3")[0].join_code == "AAAAA"  # an ended session frees it


def test_a_viewer_presents_only_when_the_operator_allows(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = Viewer(role="viewer", identity="alice@example.com")
    as_alice = participant_key(oidc_identity=alice.identity)
    with pytest.raises(PermissionDenied):
        sessions.start(alice, as_alice)
    monkeypatch.setenv("SHOOTOUT_SESSION_PRESENTERS", "alice@example.com")
    info, seat = sessions.start(alice, as_alice, "Alice's")
    assert info.is_presenter(seat)
    # The same login in another tab is the same person: the presenter again, not a follower.
    _, again = sessions.join(info.join_code, participant_key(oidc_identity=alice.identity))
    assert again == seat


def test_participants_are_distinct_and_join_once(room: Room) -> None:
    a, b = room.followers
    assert a.identity_hash != b.identity_hash
    assert room.presenter.identity_hash not in (a.identity_hash, b.identity_hash)
    assert sessions.presence(room.info.id).joined == 2
    # Joining twice as one participant keeps one participant.
    sessions.join(room.info.join_code, "tab-0")
    assert sessions.presence(room.info.id).joined == 2


def test_identities_are_stored_only_as_hashes(room: Room) -> None:
    from sqlalchemy import select

    from db.models import DemoSession, SessionParticipant
    from db.session import session_scope

    with session_scope() as db:
        stored = [
            *db.scalars(select(SessionParticipant.identity_hash)),
            db.scalar(select(DemoSession.presenter_hash)),
        ]
    assert all(len(value) == 64 and "10.0.0.9" not in value and "tab" not in value for value in stored)


def test_the_join_link_uses_the_browser_s_address() -> None:
    assert (
        sessions.join_link("https://team.example:8443/session", "K7M3X")
        == "https://team.example:8443/session?join=K7M3X"
    )
    assert sessions.join_link(None, "K7M3X") == "/session?join=K7M3X"
    assert sessions.join_link("javascript:alert(1)", "K7M3X") == "/session?join=K7M3X"


def test_bad_codes_say_why(room: Room) -> None:
    with pytest.raises(ValidationError, match="not a join code"):
        sessions.join("12", "x")
    with pytest.raises(NotFoundError, match="No live session"):
        sessions.join("XXXXX" if room.info.join_code != "XXXXX" else "YYYYY", "x")


def test_only_the_presenter_ends_and_then_nobody_joins(room: Room) -> None:
    with pytest.raises(sessions.NotPresenter):
        sessions.end(room.followers[0])
    assert sessions.end(room.presenter).ended_at is not None
    with pytest.raises(NotFoundError):
        sessions.join(room.info.join_code, "late")
    assert sessions.state(room.info.id).ended


def test_take_over_needs_a_presenter_and_moves_the_seat(room: Room) -> None:
    with pytest.raises(PermissionDenied):
        sessions.take_over(room.info.id, ROOM, "tab-0")
    seat = sessions.take_over(room.info.id, OPERATOR, "after-reload")
    sessions.publish(seat, sessions.Shown(kind="note", text="back"))
    with pytest.raises(sessions.NotPresenter):
        sessions.publish(room.presenter, sessions.Shown(kind="note", text="old tab"))


def test_the_list_counts_events_and_participants(room: Room) -> None:
    sessions.publish(room.presenter, sessions.Shown(kind="note", text="hello"))
    listed = sessions.list_sessions()
    assert [(s.id, s.title, s.events, s.participants) for s in listed] == [
        (room.info.id, "Friday demo", 1, 2)
    ]


def test_hashes_are_keyed_with_the_operator_s_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.sessions.identity import identity_hash

    plain = identity_hash(1, "login:alice@example.com")
    monkeypatch.setenv("SHOOTOUT_SESSION_SECRET", "s3cret")
    assert identity_hash(1, "login:alice@example.com") != plain
    assert identity_hash(1, "login:alice@example.com") == identity_hash(1, "login:alice@example.com")
    assert identity_hash(2, "login:alice@example.com") != identity_hash(1, "login:alice@example.com")


def test_a_reloaded_tab_gets_its_seat_back(room: Room) -> None:
    """A reload loses the tab's state, not the person: the presenter presents again and a
    follower follows again; one who left, or anyone in no live session, gets nothing."""
    back = sessions.rejoin("presenter-tab")
    assert back is not None and back.presenting and back.seat == room.presenter
    assert back.info.join_code == room.info.join_code
    follower = sessions.rejoin("tab-1")
    assert follower is not None and not follower.presenting and follower.following
    assert follower.seat == room.followers[1]
    sessions.set_following(room.followers[0], False)  # left, or stopped following
    assert sessions.rejoin("tab-0") is None
    assert sessions.rejoin("stranger") is None
    sessions.end(room.presenter)
    assert sessions.rejoin("presenter-tab") is None
    assert sessions.rejoin("tab-1") is None


def test_a_participant_rejoins_the_session_they_present_before_one_they_follow(
    room: Room,
) -> None:
    own, seat = sessions.start(OPERATOR, "tab-1", "Their own")
    back = sessions.rejoin("tab-1")
    assert back is not None and back.presenting and back.info.id == own.id and back.seat == seat
