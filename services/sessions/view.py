"""What the Session page reads, in one place: the session itself (start, join, follow, the
presenter's seat, the record) and, for a follower's screen, the other features' views of what
the presenter shows (an exchange, a run, a compare, a demo, the Planner). The follower draws
them with the pages' own pieces, read-only: nothing here starts, cancels or changes a run.
"""

from __future__ import annotations

from services.bench.view import run_view as benchmark_view
from services.demos.runner import demo_view
from services.planner.plan import PlanRequest
from services.playground import get_exchange, reveal, vote_best
from services.playground.view import VOTER_WORDS, Arrangement, arrange, live_tally_line, units
from services.runs import get_run
from services.runs.view import HIDDEN_ENGINES, blind_answers, compare_page_view, id_list, run_page_view
from services.runstate.lifecycle import ACTIVE_STATUSES
from services.sessions import (
    NotPresenter,
    Rejoined,
    Seat,
    SessionEnded,
    SessionInfo,
    Shown,
    describe,
    end,
    follow,
    get,
    join,
    join_link,
    may_present,
    normalise_code,
    note,
    plan_request,
    planner_shown,
    poll,
    presence,
    publish,
    qr_svg,
    rejoin,
    session_report,
    sessions_table,
    set_following,
    shown_from_address,
    start,
    state,
    take_over,
    timeline,
)
from services.sessions.live import wait_for_change

__all__ = [
    "ACTIVE_STATUSES",
    "HIDDEN_ENGINES",
    "VOTER_WORDS",
    "Arrangement",
    "NotPresenter",
    "PlanRequest",
    "Rejoined",
    "Seat",
    "SessionEnded",
    "SessionInfo",
    "Shown",
    "arrange",
    "benchmark_view",
    "blind_answers",
    "compare_page_view",
    "demo_view",
    "describe",
    "end",
    "end_question",
    "first_words",
    "get",
    "get_exchange",
    "id_list",
    "is_running",
    "join",
    "join_link",
    "live_tally_line",
    "may_present",
    "normalise_code",
    "note",
    "plan_request",
    "planner_shown",
    "poll",
    "presence",
    "publish",
    "qr_svg",
    "rejoin",
    "reveal",
    "run_page_view",
    "session_report",
    "sessions_table",
    "set_following",
    "shared_exchange",
    "shown_from_address",
    "start",
    "state",
    "take_over",
    "timeline",
    "units",
    "vote_best",
    "wait_for_change",
]

#: A follower's read of an exchange, shared by the room (services/sessions/follow.py).
shared_exchange = follow.exchange
first_words = follow.first_words


def end_question(session_id: int) -> str:
    """What ending the session costs the room, asked before it ends (markdown-safe)."""
    info = get(session_id)
    following = presence(session_id).following
    people = f"{following} follower{'s' if following != 1 else ''}"
    return (
        f"End this session? The room loses it at once: the screens of the {people} following now "
        f"stop showing what you open, join code `{info.join_code}` joins no one any more, and a "
        "blind vote on their screens ends with it. The timeline, "
        "the votes cast and the HTML report stay."
    )


def is_running(run_id: int) -> tuple[str, bool]:
    """A shown run's kind, and whether it still runs (a follower's pane refreshes while it does)."""
    detail = get_run(run_id)
    return detail.kind, detail.status in ACTIVE_STATUSES
