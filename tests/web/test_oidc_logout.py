"""Issue 44, item 5, for OIDC logins: Streamlit's logout deletes its login cookie in the browser
that pressed it, nothing more, so another tab's open page (and any copy of the cookie) went on
acting as the logged-in user. The gate now records the logout (services/team/oidc_logins.py),
closes that login's open websockets, refuses its cookie, and the pages check it on every call
of `common.viewer()`."""

from __future__ import annotations

import json

import pytest
from streamlit.web.server.server_util import get_cookie_secret
from streamlit.web.server.starlette.starlette_app_utils import create_signed_value

from services.team import access, oidc_logins
from web import gate
from web.sockets import CLOSE_CODE, LiveSocket, oidc_login_holds, sockets

ADA = {"is_logged_in": True, "email": "ada@example.org", "groups": [], "origin": "http://x"}
BO = {**ADA, "email": "bo@example.org"}


def _cookie(user: dict) -> str:
    return create_signed_value(get_cookie_secret(), "_streamlit_user", json.dumps(user)).decode()


def _forget() -> None:
    """As another server process sharing the database: nothing remembered in this one."""
    oidc_logins._live.clear()
    oidc_logins._ended.clear()


@pytest.fixture(autouse=True)
def _fresh_process() -> None:
    _forget()  # each test's database is new: what an earlier test ended is not ended here


def test_a_login_key_is_its_cookie_whole_and_nothing_else() -> None:
    one = {"_streamlit_user": "a", "_streamlit_user__1": "b", "other": "x"}
    assert oidc_logins.login_key(one) == oidc_logins.login_key(dict(reversed(one.items())))
    assert oidc_logins.login_key({**one, "_streamlit_user__1": "c"}) != oidc_logins.login_key(one)
    assert oidc_logins.login_key({**one, "_streamlit_user_tokens": "t"}) == oidc_logins.login_key(one)
    assert oidc_logins.login_key({"other": "x"}) is None


def test_an_ended_login_stays_ended_for_every_process(db_url: str) -> None:
    ada, bo = (
        oidc_logins.login_key({"_streamlit_user": "ada"}),
        oidc_logins.login_key({"_streamlit_user": "bo"}),
    )
    assert ada and bo and not oidc_logins.ended(ada)  # remembered as live for a second
    oidc_logins.end(ada, "ada@example.org")
    oidc_logins.end(ada, "ada@example.org")  # the same login's other tab: nothing new
    assert oidc_logins.ended(ada) and not oidc_logins.ended(bo) and not oidc_logins.ended(None)
    _forget()
    assert oidc_logins.ended(ada) and not oidc_logins.ended(bo)


async def _get(path: str, cookie: str) -> list[dict]:
    """One GET through the gate (Streamlit's app behind it answers 200); what went out."""
    sent: list[dict] = []
    reached: list[str] = []

    async def app(scope: dict, receive: object, send: object) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "scheme": "http",
        "client": ("10.0.0.1", 5000),
        "headers": [(b"host", b"127.0.0.1"), (b"cookie", f"_streamlit_user={cookie}".encode())],
    }
    await gate.Gate(app, bind_address="127.0.0.1")(scope, receive, send)  # type: ignore[arg-type]
    assert reached == [path]  # Streamlit's own logout still runs (and deletes the cookie)
    return sent


async def test_an_oidc_logout_ends_that_login_everywhere(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate, "_oidc_configured", lambda: True)
    ada, bo = _cookie(ADA), _cookie(BO)
    key = oidc_logins.login_key({"_streamlit_user": ada})
    assert key is not None
    # Another tab of Ada's login has its page open.
    closed: list[dict] = []

    async def receive() -> dict:
        return {"type": "websocket.receive", "bytes": b"rerun"}

    async def send(message: dict) -> None:
        closed.append(message)

    tab = LiveSocket(key, receive, send, holds=oidc_login_holds)  # type: ignore[arg-type]  # plain dicts
    sockets.add(tab)
    await tab.send({"type": "websocket.accept"})
    assert (await tab.receive())["type"] == "websocket.receive"  # acted on while logged in

    await _get("/auth/logout", ada)

    assert closed[-1] == {"type": "websocket.close", "code": CLOSE_CODE} and tab.closed
    assert gate.viewer_for({"cookie": f"_streamlit_user={ada}"}, "10.0.0.1", oidc=True) is None
    _forget()  # and for another server process sharing the database
    assert gate.viewer_for({"cookie": f"_streamlit_user={ada}"}, "10.0.0.1", oidc=True) is None
    # Bo's login, and Ada's next login (a new cookie), are not touched.
    assert gate.viewer_for({"cookie": f"_streamlit_user={bo}"}, "10.0.0.1", oidc=True) is not None
    again = _cookie({**ADA, "iat": 2})  # a new login: another cookie
    assert gate.viewer_for({"cookie": f"_streamlit_user={again}"}, "10.0.0.1", oidc=True) is not None


async def test_a_forged_cookie_ends_no_login(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate, "_oidc_configured", lambda: True)
    ada = _cookie(ADA)
    forged = ada[:-3] + "xyz"
    await _get("/auth/logout", forged)
    assert not oidc_logins.ended(oidc_logins.login_key({"_streamlit_user": forged}))
    assert gate.viewer_for({"cookie": f"_streamlit_user={ada}"}, "10.0.0.1", oidc=True) is not None


async def test_log_out_everywhere_ends_the_oidc_logins_seen(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Log out everywhere" revokes every row of login_sessions: an OIDC login the gate has
    seen has one, so its cookie (and any copy) opens nothing after, in every process."""
    monkeypatch.setattr(gate, "_oidc_configured", lambda: True)
    ada = _cookie(ADA)
    assert gate.viewer_for({"cookie": f"_streamlit_user={ada}"}, "10.0.0.1", oidc=True) is not None
    access.end_all_sessions(access.Viewer(role="operator", identity="ops"))
    oidc_logins.forget_live()
    assert gate.viewer_for({"cookie": f"_streamlit_user={ada}"}, "10.0.0.1", oidc=True) is None
    _forget()  # another server process sharing the database
    assert gate.viewer_for({"cookie": f"_streamlit_user={ada}"}, "10.0.0.1", oidc=True) is None
    # A login after that (a new cookie) is live, and one logout of it still works.
    again = _cookie({**ADA, "iat": 3})
    assert gate.viewer_for({"cookie": f"_streamlit_user={again}"}, "10.0.0.1", oidc=True) is not None
    await _get("/auth/logout", again)
    assert gate.viewer_for({"cookie": f"_streamlit_user={again}"}, "10.0.0.1", oidc=True) is None
