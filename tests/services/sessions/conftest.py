"""A live session with one presenter tab and two follower tabs, on a fresh database."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from services import sessions
from services.access import Viewer

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
    followers = [sessions.join(info.join_code, ROOM, f"tab-{n}")[1] for n in range(2)]
    return Room(info, presenter, followers)
