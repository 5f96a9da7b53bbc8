"""The typed records of a team demo session: what the presenter shows (`Shown`), what a
follower's poll reads (`LiveState`), a session as a list shows it, one timeline entry."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

from services.core.errors import ValidationError
from services.team.access import PermissionDenied

ShownKind = Literal["run", "exchange", "demo_step", "parity", "planner", "compare", "note"]
SHOWN_KINDS: tuple[str, ...] = get_args(ShownKind)


class NotPresenter(PermissionDenied):
    """A participant who is not the session's presenter tried to act as one."""


class SessionEnded(ValidationError):
    """The session has ended: nothing more is shown in it."""


@dataclass(frozen=True)
class Shown:
    """One thing the presenter showed, by reference (never a copy of it): the follower's screen
    reads the run, the exchange or the plan itself, as it stands."""

    kind: ShownKind
    #: run and parity: one run; exchange: the Playground exchange's run id; demo_step: the
    #: demo's run; compare: two runs or more.
    run_ids: tuple[int, ...] = ()
    #: demo_step: the step on the presenter's screen (None: the demo as it stands).
    step: int | None = None
    #: compare: the baseline series key, as the Runs page's address carries it.
    baseline: str | None = None
    #: planner: the Planner's inputs, by name, as text (services/sessions/planner.py reads them).
    inputs: tuple[tuple[str, str], ...] = ()
    #: note: the presenter's words.
    text: str = ""

    @property
    def run_id(self) -> int | None:
        return self.run_ids[0] if self.run_ids else None

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "run_ids": list(self.run_ids),
            "step": self.step,
            "baseline": self.baseline,
            "inputs": [list(pair) for pair in self.inputs],
            "text": self.text,
        }

    @classmethod
    def from_json(cls, data: object) -> Shown | None:
        """The stored reference read leniently: None for anything that is not one."""
        if not isinstance(data, dict) or data.get("kind") not in SHOWN_KINDS:
            return None
        ids = data.get("run_ids")
        step = data.get("step")
        baseline = data.get("baseline")
        inputs = data.get("inputs")
        text = data.get("text")
        return cls(
            kind=data["kind"],
            run_ids=tuple(i for i in ids if isinstance(i, int)) if isinstance(ids, list) else (),
            step=step if isinstance(step, int) else None,
            baseline=baseline if isinstance(baseline, str) else None,
            inputs=tuple(
                (str(pair[0]), str(pair[1]))
                for pair in (inputs if isinstance(inputs, list) else [])
                if isinstance(pair, list) and len(pair) == 2
            ),
            text=text if isinstance(text, str) else "",
        )


@dataclass(frozen=True)
class Seat:
    """Someone's place in one session: the session and the hash of who they are in it."""

    session_id: int
    identity_hash: str


@dataclass(frozen=True)
class SessionInfo:
    id: int
    title: str
    join_code: str
    started_at: datetime
    ended_at: datetime | None
    presenter_hash: str

    @property
    def live(self) -> bool:
        return self.ended_at is None

    def is_presenter(self, seat: Seat) -> bool:
        return seat.session_id == self.id and seat.identity_hash == self.presenter_hash


@dataclass(frozen=True)
class Rejoined:
    """A seat found again for a participant whose tab lost it (a reload, a new tab)."""

    info: SessionInfo
    seat: Seat
    presenting: bool
    following: bool


@dataclass(frozen=True)
class LiveState:
    """What a follower's poll reads: one row, by primary key."""

    session_id: int
    title: str
    ended: bool
    #: Grows by one with every new thing shown: a follower redraws only when it changes.
    seq: int
    shown: Shown | None


@dataclass(frozen=True)
class TimelineEntry:
    seq: int
    at: datetime
    shown: Shown
    #: In words: "Benchmark run #12 (nightly)", "Playground exchange #5", "Note".
    label: str


@dataclass(frozen=True)
class SessionSummary:
    """One session in the Runs page's list."""

    id: int
    title: str
    join_code: str
    started_at: datetime
    ended_at: datetime | None
    events: int
    participants: int


@dataclass(frozen=True)
class Presence:
    """The presenter's view of the room."""

    following: int
    joined: int
    seen_recently: list[str] = field(default_factory=list)
