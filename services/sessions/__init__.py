"""Team demo sessions: a presenter drives, followers' screens show what the presenter shows,
and the session keeps a timeline and ends with an offline HTML report.

- `records`: Shown (what is on the presenter's screen, by reference), Seat, LiveState, errors;
- `identity`: who someone is in a session (a hash), who may present;
- `codes`: join codes;
- `store`: start, join, hand over, end, list;
- `live`: publish, the followers' poll and wait, following or not, presence, notes;
- `follow`: a follower's read of a Playground exchange, shared by the room;
- `addresses`: what a page's address shows; `planner`: the Planner's inputs;
- `timeline` and `report`: the record.

No Streamlit here: the Session page and the frame's hook (app_pages/parts/session_*.py) call this.
Votes are not kept here: a follower's vote goes through services.playground.votes.
"""

from services.sessions.addresses import shown_for_run, shown_from_address
from services.sessions.codes import join_link
from services.sessions.codes import normalise as normalise_code
from services.sessions.identity import may_present
from services.sessions.live import (
    is_following,
    note,
    poll,
    presence,
    publish,
    set_following,
    state,
)
from services.sessions.planner import plan_request, planner_shown
from services.sessions.qr import qr_svg
from services.sessions.records import (
    LiveState,
    NotPresenter,
    Presence,
    Rejoined,
    Seat,
    SessionEnded,
    SessionInfo,
    SessionSummary,
    Shown,
    ShownKind,
    TimelineEntry,
)
from services.sessions.report import session_report
from services.sessions.store import (
    by_code,
    end,
    get,
    join,
    list_sessions,
    rejoin,
    start,
    take_over,
)
from services.sessions.timeline import describe, sessions_table, timeline

__all__ = [
    "LiveState",
    "NotPresenter",
    "Presence",
    "Rejoined",
    "Seat",
    "SessionEnded",
    "SessionInfo",
    "SessionSummary",
    "Shown",
    "ShownKind",
    "TimelineEntry",
    "by_code",
    "describe",
    "end",
    "get",
    "is_following",
    "join",
    "join_link",
    "list_sessions",
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
    "session_report",
    "sessions_table",
    "set_following",
    "shown_for_run",
    "shown_from_address",
    "start",
    "state",
    "take_over",
    "timeline",
]
