"""The Session page in AppTest: start, join by the link's code, the follower sees the
presenter's exchange read-only, stops and follows again; the record for those who missed it."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from services import sessions
from tests.conftest import REPO_ROOT
from tests.services.sessions.conftest import stored_exchange


def session_page(**params: str) -> AppTest:
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "session.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def button(at: AppTest, label: str) -> None:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception


def text(at: AppTest) -> str:
    return " ".join(
        str(e.value) for e in [*at.markdown, *at.caption, *at.subheader, *at.info, *at.metric]
    )


def test_start_join_follow_stop_and_follow_again(db_url: str) -> None:
    presenter = session_page()
    presenter.text_input(key="session_title").set_value("Friday demo")
    button(presenter, "Start session")
    live = sessions.list_sessions()[0]
    assert live.join_code in text(presenter) and "Presenting: Friday demo" in text(presenter)
    assert len(presenter.get("image")) == 1  # the QR code

    follower = session_page(join=live.join_code)
    assert "The presenter has shown nothing yet" in text(follower)

    # The presenter opens an exchange on the Playground (the frame's hook publishes it).
    exchange = stored_exchange(answers={"engine-a": "red fox", "engine-b": "blue sky"})
    seat = presenter.session_state["session_seat"]
    sessions.publish(seat, sessions.Shown(kind="exchange", run_ids=(exchange,)))
    follower.run()
    shown = text(follower)
    assert "red fox" in shown and "blue sky" in shown and "Name a colour." in shown
    assert not [b for b in follower.button if b.label in ("Send", "Stop", "Cancel run")]

    button(follower, "Stop following")
    assert "You stopped following" in text(follower) and "red fox" not in text(follower)
    assert sessions.presence(live.id).following == 0
    button(follower, "Follow again")
    assert "red fox" in text(follower)
    assert sessions.presence(live.id).following == 1

    presenter.run()
    assert any(m.label == "Following now" and m.value == "1" for m in presenter.metric)
    # Issue 45: "End session" asks first and says what the room loses; "Keep presenting" keeps it.
    button(presenter, "End session…")
    [question] = presenter.warning
    assert "1 follower following now" in question.value and live.join_code in question.value
    button(presenter, "Keep presenting")
    assert sessions.get(live.id).ended_at is None and not presenter.warning
    button(presenter, "End session…")
    button(presenter, "End it now")
    assert sessions.get(live.id).ended_at is not None
    assert presenter.query_params["session"] == str(live.id)
    assert "Timeline" in text(presenter)


def test_a_viewer_not_allowed_cannot_start(db_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from app_pages import common
    from services.team.access import Viewer

    monkeypatch.setattr(common, "viewer", lambda: Viewer(role="viewer", identity="ip:10.1.1.1"))
    at = session_page()
    assert not [b for b in at.button if b.label == "Start session"]
    assert "SHOOTOUT_SESSION_PRESENTERS" in text(at)


def test_a_bad_code_and_a_bad_record_say_why(db_url: str) -> None:
    assert "not a join code" in " ".join(e.value for e in session_page(join="12").error)
    assert "not a session number" in " ".join(e.value for e in session_page(session="x").error)
    assert "no session #7" in " ".join(e.value for e in session_page(session="7").error)


def test_the_runs_page_lists_sessions(db_url: str) -> None:
    from services.team.access import Viewer

    info, seat = sessions.start(Viewer(role="operator", identity="local"), "tab", "Quarterly")
    sessions.note(seat, "hello")
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "runs.py"), default_timeout=60)
    at.run()
    assert not at.exception
    assert any(e.label == "Team sessions (1)" for e in at.expander)
    table = next(d for d in at.dataframe if "Code" in d.value.columns)
    assert list(table.value["Session"]) == [f"/session?session={info.id}"]
    assert list(table.value["Things shown"]) == [1]


def test_leaving_drops_the_join_address(db_url: str) -> None:
    from services.team.access import Viewer

    info, _ = sessions.start(Viewer(role="operator", identity="local"), "presenter-tab", "")
    follower = session_page(join=info.join_code)
    button(follower, "Leave")
    assert "join" not in follower.query_params
    assert "Join a session" in text(follower)


def test_a_follower_sees_a_run_a_plan_and_a_refusal_read_only(db_url: str) -> None:
    from db.models import Run
    from db.session import session_scope
    from services.planner.plan import PlanRequest
    from services.team.access import Viewer

    with session_scope() as db:
        run = Run(kind="benchmark", status="finished", name="nightly")
        db.add(run)
        db.flush()
        run_id = run.id
    info, seat = sessions.start(Viewer(role="operator", identity="local"), "presenter-tab", "")
    follower = session_page(join=info.join_code)

    sessions.publish(seat, sessions.Shown(kind="run", run_ids=(run_id,)))
    follower.run()
    assert not follower.exception
    assert "nightly" in " ".join(h.value for h in follower.subheader)
    assert not [b for b in follower.button if b.label in ("Archive", "Delete…", "Cancel run")]

    sessions.publish(
        seat, sessions.planner_shown(PlanRequest(model="llama-3-70b", gpu="h100-sxm", batch=4))
    )
    follower.run()
    assert not follower.exception
    assert any(m.label == "Fits?" for m in follower.metric)
    assert "llama-3-70b on h100-sxm" in text(follower)

    sessions.publish(seat, sessions.Shown(kind="compare", run_ids=(run_id, 999)))
    follower.run()
    assert not follower.exception
    assert "999" in " ".join(e.value for e in follower.error)


def test_the_room_votes_once_each_and_the_presenter_sees_the_tally_and_reveals(db_url: str) -> None:
    presenter = session_page()
    button(presenter, "Start session")
    live = sessions.list_sessions()[0]
    exchange = stored_exchange(blind=True)
    sessions.publish(
        presenter.session_state["session_seat"], sessions.Shown(kind="exchange", run_ids=(exchange,))
    )
    presenter.run()
    assert "No votes yet on the shown exchange." in text(presenter)

    room = [session_page(join=live.join_code) for _ in range(3)]
    for follower, choice in zip(room, ("Answer A", "Answer A", "No clear winner"), strict=True):
        assert "red fox" in text(follower) and "engine-a" not in text(follower)  # blind
        button(follower, choice)
        button(follower, "Confirm vote")
    # A second vote by the same participant is refused, not counted.
    if any(b.label == "Answer B" for b in room[0].button):
        button(room[0], "Answer B")
    presenter.run()
    tally = text(presenter)
    assert "Votes so far, 3 participants" in tally and "no clear winner: 1" in tally
    button(presenter, "Reveal the engines")
    assert "Reveal the engines" not in [b.label for b in presenter.button]


# Issue 56: a follower's ballot names no engine, not even in its widget keys, and asks first.
def test_a_followers_ballot_names_no_engine_and_counts_only_once_confirmed(db_url: str) -> None:
    from services.playground import votes
    from services.team.access import Viewer
    from tests.services.playground.test_view import LLAMA, TRITON, _blind_exchange_with_notes

    run_id = _blind_exchange_with_notes()
    info, seat = sessions.start(Viewer(role="operator", identity="local"), "presenter-tab", "")
    sessions.publish(seat, sessions.Shown(kind="exchange", run_ids=(run_id,)))
    follower = session_page(join=info.join_code)
    keys = [str(b.key) for b in follower.button if str(b.key).startswith("session_vote_")]
    assert len(keys) == 3, keys  # two answers and "No clear winner"
    shown = " ".join(
        [text(follower), *(str(e.value) for e in [*follower.warning, *follower.error]), *keys]
    )
    for word in (TRITON, LLAMA, "Triton", "llama.cpp", "8001", "model-of"):
        assert word not in shown, (word, shown)
    assert "An engine in this exchange does not take" in shown.replace("\\", "")
    # A click only picks: nothing counts until confirmed, and Cancel takes the pick back.
    button(follower, "Answer A")
    assert votes.votes_for(run_id) == []
    assert any("Answer A" in w.value for w in follower.warning)
    button(follower, "Cancel")
    assert votes.votes_for(run_id) == [] and not follower.warning
    button(follower, "Answer A")
    button(follower, "Confirm vote")
    assert len(votes.votes_for(run_id)) == 1
    assert "Vote counted." in " ".join(s.value for s in follower.success)


def test_the_presenters_tally_counts_the_votes_of_this_session_as_its_report_does(
    db_url: str,
) -> None:
    from services.playground import votes

    exchange = stored_exchange(blind=True)
    votes.vote_best(exchange, "engine-a", participant="voted-before-the-session")
    presenter = session_page()
    button(presenter, "Start session")
    live = sessions.list_sessions()[0]
    sessions.publish(
        presenter.session_state["session_seat"], sessions.Shown(kind="exchange", run_ids=(exchange,))
    )
    presenter.run()
    assert "No votes yet on the shown exchange." in text(presenter), text(presenter)
    assert b"No votes in this session." in sessions.session_report(live.id).data

    follower = session_page(join=live.join_code)
    button(follower, "Answer B")
    button(follower, "Confirm vote")
    presenter.run()
    assert "Votes so far, 1 participant:" in text(presenter), text(presenter)
    assert b"No votes in this session." not in sessions.session_report(live.id).data
