"""Issue 44, item 5, for OIDC logins: Streamlit's logout deletes its login cookie in the browser
that pressed it, nothing more, so another tab's open page (and any copy of the cookie) went on
acting as the logged-in user. The gate now records the logout (services/team/oidc_logins.py),
closes that login's open websockets, refuses its cookie, and the pages check it on every call
of `common.viewer()`."""

from __future__ import annotations

import json
import secrets

import pytest
from streamlit.auth_util import set_cookie_with_chunks
from streamlit.web.server.server_util import get_cookie_secret
from streamlit.web.server.starlette.starlette_app_utils import create_signed_value

from services.team import access, oidc_logins
from web import gate, oidc_cookie
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


def test_a_login_key_is_the_cookies_streamlit_reads_and_nothing_else() -> None:
    ada, bo = _cookie(ADA), _cookie(BO)
    one = {"_streamlit_user": ada, "other": "x"}
    key = oidc_cookie.login_key(one)
    assert key is not None and key == oidc_cookie.login_key(dict(reversed(one.items())))
    assert key == oidc_logins.login_key({"_streamlit_user": ada})
    assert oidc_cookie.login_key({**one, "_streamlit_user": bo}) not in (key, None)
    for ignored in ("_streamlit_user_tokens", "_streamlit_user__1", "_streamlit_user_1", "x"):
        assert oidc_cookie.login_key({**one, ignored: "t"}) == key
    assert oidc_cookie.login_key({"other": "x"}) is None
    chunked = _chunked({**ADA, "padding": secrets.token_urlsafe(4500)})
    assert oidc_cookie.read(chunked).value is not None  # Streamlit's reader joins the chunks
    assert oidc_cookie.login_key(chunked) == oidc_logins.login_key(chunked)
    last = f"_streamlit_user_{len(chunked) - 1}"
    assert oidc_cookie.login_key({**chunked, last: "changed"}) != oidc_cookie.login_key(chunked)
    assert oidc_cookie.login_key({**chunked, f"_streamlit_user_{len(chunked)}": "past"}) == (
        oidc_cookie.login_key(chunked)
    )


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


async def _request(path: str, cookie_header: str) -> tuple[int, list[str], list[dict]]:
    """One GET through the gate (Streamlit's app behind it answers 200): the status, the paths
    that reached the app, and what went out."""
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
        "headers": [(b"host", b"127.0.0.1"), (b"cookie", cookie_header.encode())],
    }
    await gate.Gate(app, bind_address="127.0.0.1")(scope, receive, send)  # type: ignore[arg-type]
    return sent[0]["status"], reached, sent


async def _get(path: str, cookie: str) -> list[dict]:
    """One GET through the gate with this `_streamlit_user` cookie; what went out."""
    _, reached, sent = await _request(path, f"_streamlit_user={cookie}")
    assert reached == [path]  # Streamlit's own logout still runs (and deletes the cookie)
    return sent


async def test_an_oidc_logout_ends_that_login_everywhere(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate, "_oidc_configured", lambda: True)
    ada, bo = _cookie(ADA), _cookie(BO)
    key = oidc_cookie.login_key({"_streamlit_user": ada})
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
    assert not oidc_logins.ended(oidc_cookie.login_key({"_streamlit_user": forged}))
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


# Issue 56: the logout record was keyed on every cookie named `_streamlit_user__*`, which
# Streamlit never reads: the logged-out cookie plus `_streamlit_user__x=1` opened every route.

#: Routes served behind the gate: Streamlit's own, and Shootout's export (web/exports.py).
SERVED = ("/_stcore/host-config", "/export/runs/1.csv")


def _header(jar: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in jar.items())


def _chunked(user: dict) -> dict[str, str]:
    """The cookies Streamlit's OIDC callback sets for a login too big for one cookie: the main
    `_streamlit_user` holds `chunks-N`, the value is in `_streamlit_user_1` to `_N`."""
    jar: dict[str, str] = {}

    def sign(name: str, value: str) -> bytes:
        return create_signed_value(get_cookie_secret(), name, value)

    set_cookie_with_chunks(
        lambda name, value: jar.__setitem__(name, sign(name, value).decode()),
        sign,
        "_streamlit_user",
        user,
        cookie_attr_size=80,
    )
    return jar


async def _statuses(cookie_header: str) -> list[int]:
    return [(await _request(path, cookie_header))[0] for path in SERVED]


@pytest.mark.parametrize(
    "extra",
    [
        "_streamlit_user__x=1",
        "_streamlit_user__1=b; _streamlit_user__2=c",
        "_streamlit_user_1=1",
        "_streamlit_user_tokens=t",
        "_streamlit_user_x=1; other=2; shootout_browser=b",
        "flag",  # a cookie without a value
    ],
)
async def test_an_extra_cookie_does_not_undo_a_logout(
    extra: str, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate, "_oidc_configured", lambda: True)
    ada = _cookie(ADA)
    assert await _statuses(f"_streamlit_user={ada}; {extra}") == [200, 200]
    await _get("/auth/logout", ada)
    for _ in range(2):  # in this process, then in another sharing the database
        assert await _statuses(f"_streamlit_user={ada}; {extra}") == [401, 401]
        assert await _statuses(f"{extra}; _streamlit_user={ada}") == [401, 401]
        _forget()


async def test_a_chunked_login_is_keyed_on_the_chunks_streamlit_reads(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A login with many claims comes in chunks (`_streamlit_user_1`, ...): two such logins have
    the same main cookie (`chunks-2`, signed the same second), so the chunks tell them apart;
    a chunk past the count, which Streamlit does not read, does not."""
    monkeypatch.setattr(gate, "_oidc_configured", lambda: True)
    padding = secrets.token_urlsafe(4500)  # random: the signer compresses, it must not fit
    ada, bo = _chunked({**ADA, "padding": padding}), _chunked({**BO, "padding": padding})
    assert len(ada) == len(bo) > 2  # chunked, the same number of chunks
    assert await _statuses(_header(ada)) == [200, 200] == await _statuses(_header(bo))
    assert gate.viewer_for({"cookie": _header(ada)}, "10.0.0.1", oidc=True) == access.Viewer(
        "viewer", "ada@example.org"
    )
    await _get("/auth/logout", "")  # no login: ends nothing
    _, reached, _ = await _request("/auth/logout", _header(ada))
    assert reached == ["/auth/logout"]
    beyond = f"_streamlit_user_{len(ada)}=z; _streamlit_user__x=1"
    for _ in range(2):
        assert await _statuses(_header(ada)) == [401, 401]
        assert await _statuses(f"{_header(ada)}; {beyond}") == [401, 401]
        assert await _statuses(_header(bo)) == [200, 200]  # another login, the same main cookie
        _forget()


async def test_a_cookie_without_a_value_drops_no_other_cookie(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 57: `SimpleCookie` dropped the whole header for one cookie without a value (any
    app on the same host can set one), which logged out every login of this server."""
    monkeypatch.setenv("SHOOTOUT_VIEWER_PASSWORD", "viewer-cookie-1")
    token = access.issue_session("viewer", "ip:10.0.0.1")
    for header in (
        f"flag; {access.SESSION_COOKIE}={token}",
        f"{access.SESSION_COOKIE}={token}; a=b c; flag",
    ):
        assert gate.viewer_for({"cookie": header}, "10.0.0.1", oidc=False) is not None
        status, reached, _ = await _request("/_stcore/host-config", header)
        assert (status, reached) == (200, ["/_stcore/host-config"])
