"""Issue 45, the tally: votes per engine with the number of voters, a 95% Wilson interval on
each engine's win share (and per pair with 3-6 engines), ties; checked against figures worked
out by hand (and the published Wilson intervals for 6/10 and 3/10)."""

from __future__ import annotations

import pytest

from services import sessions
from services.playground import votes
from services.runs import display
from services.runs.ranking import ranking_view
from services.sessions.records import Shown
from services.team.access import Viewer
from services.votes.participants import participant_key
from services.votes.tally import tally_tables, vote_tally, wilson
from tests.services.playground.test_votes import stored_exchange

OPERATOR = Viewer(role="operator", identity="local")


def test_wilson_against_hand_computed_intervals() -> None:
    # centre (p + z²/2n) / (1 + z²/n), half-width z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n), z = 1.96
    assert wilson(6, 10) == pytest.approx((0.3127, 0.8318), abs=1e-4)
    assert wilson(3, 10) == pytest.approx((0.1078, 0.6032), abs=1e-4)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)  # z²/n / (1 + z²/n)
    assert wilson(6, 9) == pytest.approx((0.3542, 0.8794), abs=1e-4)
    assert wilson(6, 6) == pytest.approx((0.6097, 1.0), abs=1e-4)
    assert wilson(0, 0) is None


def _room(run_id: int, session_id: int | None = None) -> None:
    """Ten voters: six pick a, three pick b, one sees no clear winner."""
    for n, winner in enumerate("aaaaaabbb"):
        votes.vote_best(
            run_id, winner, participant=participant_key(browser=f"v{n}"), session_id=session_id
        )
    votes.vote_best(run_id, votes.TIE, participant=participant_key(browser="v9"), session_id=session_id)


def test_the_tally_of_ten_voters_on_three_engines(db_url: str) -> None:
    run_id = stored_exchange(["a", "b", "c"])
    _room(run_id)
    votes.reveal(run_id, OPERATOR)
    found = vote_tally(run_id)
    assert found.voters == 10 and found.ties == 1 and not found.hidden
    shares = {e.name: (e.wins, e.ballots, e.share) for e in found.engines}
    assert shares == {"a": (6, 10, 0.6), "b": (3, 10, 0.3), "c": (0, 10, 0.0)}
    assert len(found.pairs) == 3  # every pair of the three, in screen order
    by_names = {frozenset((p.first, p.second)): p for p in found.pairs}
    a_b = by_names[frozenset(("a", "b"))]
    first_wins = a_b.wins_first if a_b.first == "a" else a_b.wins_second
    assert first_wins == 6 and a_b.ties == 1 and a_b.wins_first + a_b.wins_second == 9
    tables = tally_tables(found)
    assert tables is not None and tables.pairs is not None
    row = tables.engines.set_index("Engine").loc["a"]
    assert (row["Votes as best"], row["Voters"], row["Win share"], row["95% interval"]) == (
        6,
        10,
        "60%",
        "31–83%",
    )
    assert tables.engines.set_index("Engine").loc["b", "95% interval"] == "11–60%"
    assert "10 voters" in tables.caption and "1 saw no clear winner" in tables.caption


def test_the_run_page_shows_it_after_the_reveal_and_the_report_by_label_before(db_url: str) -> None:
    run_id = stored_exchange(["a", "b", "c"])
    info, presenter = sessions.start(OPERATOR, "presenter-tab", "demo")
    sessions.publish(presenter, Shown(kind="exchange", run_ids=(run_id,)))
    _room(run_id, session_id=info.id)
    assert display.run_view(run_id).votes is None  # hidden: no tally by engine on the run page
    report = sessions.session_report(info.id).data.decode()
    assert "10 voters" in report and "Answer A" in report and "31–83%" in report
    votes.reveal(run_id, OPERATOR)
    shown = display.run_view(run_id).votes
    assert shown is not None and shown.engines["Engine"].tolist() == votes.blind_order(
        run_id, ["a", "b", "c"]
    )
    assert shown.pairs is not None and len(shown.pairs) == 3


def test_the_ranking_says_how_many_votes_back_each_place(db_url: str) -> None:
    run_id = stored_exchange(["a", "b"])
    for n, winner in enumerate("aab"):
        votes.vote_best(run_id, winner, participant=participant_key(browser=f"r{n}"))
    votes.reveal(run_id, OPERATOR)
    shown = ranking_view()
    assert shown is not None
    assert "place 1: a, on 3 votes" in shown.caption and "place 2: b, on 3 votes" in shown.caption
