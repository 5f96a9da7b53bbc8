"""A live session with one presenter tab and two follower tabs, on a fresh database."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from services import sessions
from services.team.access import Viewer

OPERATOR = Viewer(role="operator", identity="local")
ROOM = Viewer(role="viewer", identity="ip:10.0.0.9")


@dataclass
class Room:
    info: sessions.SessionInfo
    presenter: sessions.Seat
    followers: list[sessions.Seat]


@pytest.fixture
def room(db_url: str) -> Room:
    sessions.live.forget_seen()
    info, presenter = sessions.start(OPERATOR, "presenter-tab", "Friday demo")
    followers = [sessions.join(info.join_code, f"tab-{n}")[1] for n in range(2)]
    return Room(info, presenter, followers)


def stored_exchange(
    prompt: str = "Name a colour.", answers: dict[str, str] | None = None, blind: bool = False
) -> int:
    """A finished Playground exchange, as the Playground's worker leaves it; its run id."""
    from db.models import Exchange, Run
    from db.session import session_scope

    answers = answers or {"engine-a": "red fox", "engine-b": "blue sky"}
    with session_scope() as db:
        run = Run(
            kind="playground",
            status="finished",
            name="exchange",
            config={"conversation_id": "c1", "turn": 1, "prompt": prompt, "blind": blind},
        )
        db.add(run)
        db.flush()
        for engine, answer in answers.items():
            db.add(
                Exchange(
                    run_id=run.id,
                    conversation_id="c1",
                    engine_name=engine,
                    messages=[{"role": "user", "content": prompt}],
                    answer=answer,
                    status="finished",
                    metrics={"ttft_s": 0.05},
                )
            )
        return run.id
