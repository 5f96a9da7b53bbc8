"""Issue 20: nothing of the app answers before a login, Streamlit's own endpoints included.

The real served app (`streamlit run serve.py`, as run.sh starts it) with an operator and a viewer
password, driven over HTTP and a raw websocket handshake as an attacker on loopback would.
"""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from services.team import access
from tests.support.served import Served, start_served_app, stop

OPERATOR, VIEWER = "op-secret-1", "view-secret-2"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    app = start_served_app(
        tmp_path_factory.mktemp("gate"),
        {"SHOOTOUT_OPERATOR_PASSWORD": OPERATOR, "SHOOTOUT_VIEWER_PASSWORD": VIEWER},
    )
    yield app
    stop(app)


def login(served: Served, password: str, next_path: str = "/") -> httpx2.Response:
    return httpx2.post(
        served.url + "/login",
        data={"password": password, "next": next_path},
        timeout=10,
        follow_redirects=False,
    )


def websocket_handshake_status(
    port: int,
    cookie: str | None = None,
    origin: str | None = None,
    token: str | None = None,
    xsrf_cookie: str | None = None,
    path: str = "/_stcore/stream",
) -> int:
    """The HTTP status a websocket upgrade to Streamlit's stream endpoint gets. `token` is what
    Streamlit's frontend sends as the second subprotocol (the `_streamlit_xsrf` cookie's value)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    cookies = [f"{access.SESSION_COOKIE}={cookie}"] if cookie else []
    if xsrf_cookie:
        cookies.append(f"_streamlit_xsrf={xsrf_cookie}")
    if cookies:
        lines.append("Cookie: " + "; ".join(cookies))
    if token:
        lines.append(f"Sec-WebSocket-Protocol: streamlit, {token}")
    if origin:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status_line = sock.recv(4096).split(b"\r\n", 1)[0]
    return int(status_line.split()[1])


def page_token(served: Served, cookie: str) -> str:
    """The websocket token a logged-in browser reads from the `_streamlit_xsrf` cookie that
    loading a page sets."""
    page = httpx2.get(served.url + "/", cookies={access.SESSION_COOKIE: cookie}, timeout=10)
    assert page.status_code == 200
    return page.cookies["_streamlit_xsrf"]


def test_streamlit_endpoints_refuse_a_client_that_has_not_logged_in(served: Served) -> None:
    for path in (
        "/_stcore/host-config",
        "/_stcore/metrics",
        "/static/js/index.js",
        "/runs?run=1",
        "/export/runs/1.csv",
        "/export/runs/1.json",
        "/export/runs/1.html",
    ):
        response = httpx2.get(served.url + path, timeout=10)
        assert response.status_code == 401, path
        assert "Log in first" in response.text
    upload = httpx2.put(
        served.url + "/_stcore/upload_file/some-session/some-file", content=b"x" * 1_000_000, timeout=10
    )
    assert upload.status_code == 401
    assert websocket_handshake_status(served.port) == 403  # no session, so nothing to upload into
    assert httpx2.get(served.url + "/_stcore/health", timeout=10).text.strip() == "ok"  # load balancers


def test_a_page_address_leads_to_the_login_and_back_to_the_same_address(served: Served) -> None:
    response = httpx2.get(
        served.url + "/runs?run=12", headers={"Accept": "text/html"}, timeout=10, follow_redirects=False
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2Fruns%3Frun%3D12"
    form = httpx2.get(served.url + response.headers["location"], timeout=10)
    assert 'name="next" value="/runs?run=12"' in form.text
    answer = login(served, VIEWER, "/runs?run=12")
    assert answer.status_code == 303 and answer.headers["location"] == "/runs?run=12"
    # Never somewhere else after login: an open redirect would hand the session page to a lookalike.
    assert login(served, VIEWER, "//evil.example/x").headers["location"] == "/"


def test_the_session_cookie_opens_everything_and_names_the_role(served: Served) -> None:
    answer = login(served, OPERATOR)
    cookie = answer.cookies[access.SESSION_COOKIE]
    set_cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie
    assert access.read_session(None) is None
    response = httpx2.get(
        served.url + "/_stcore/host-config", cookies={access.SESSION_COOKIE: cookie}, timeout=10
    )
    assert response.status_code == 200
    assert websocket_handshake_status(served.port, cookie, token=page_token(served, cookie)) == 101
    # A cookie signed with another secret (another server, or forged) opens nothing.
    forged = cookie[:-4] + ("AAAA" if not cookie.endswith("AAAA") else "BBBB")
    assert (
        httpx2.get(
            served.url + "/_stcore/host-config", cookies={access.SESSION_COOKIE: forged}, timeout=10
        ).status_code
        == 401
    )
    assert websocket_handshake_status(served.port, forged) == 403


def test_host_and_origin_are_checked(served: Served) -> None:
    # DNS rebinding: a page of evil.example whose name now points at 127.0.0.1.
    response = httpx2.get(served.url + "/_stcore/health", headers={"Host": "evil.example"}, timeout=10)
    assert response.status_code == 421
    cookie = login(served, VIEWER).cookies[access.SESSION_COOKIE]
    token = page_token(served, cookie)
    assert websocket_handshake_status(served.port, cookie, "http://evil.example", token) == 403
    post = httpx2.post(
        served.url + "/login",
        data={"password": VIEWER},
        headers={"Origin": "http://evil.example"},
        timeout=10,
        follow_redirects=False,
    )
    assert post.status_code == 403


def test_wrong_passwords_are_throttled_and_logged(tmp_path: Path) -> None:
    # A server of its own: the throttle is per server process and would lock out the other tests.
    app = start_served_app(tmp_path, {"SHOOTOUT_VIEWER_PASSWORD": VIEWER})
    try:
        statuses = [login(app, f"guess-{i}").status_code for i in range(7)]
        assert statuses[:5] == [401] * 5  # FREE_FAILURES, then locked out
        assert statuses[6] == 429
        locked = login(app, VIEWER)  # even the right password waits out the lockout
        assert locked.status_code == 429 and "try again in" in locked.text
    finally:
        stop(app)
    assert "wrong password from 127.0.0.1" in app.log.read_text()


def test_without_a_login_configured_only_loopback_is_the_operator() -> None:
    assert access.anonymous_viewer("127.0.0.1").role == "operator"
    assert access.anonymous_viewer("::1").role == "operator"
    assert access.anonymous_viewer("10.1.2.3") == access.Viewer("viewer", "ip:10.1.2.3")


def test_passwords_open_their_roles(monkeypatch: pytest.MonkeyPatch, db_url: str) -> None:
    monkeypatch.setenv("SHOOTOUT_OPERATOR_PASSWORD", OPERATOR)
    monkeypatch.setenv("SHOOTOUT_PASSWORD", VIEWER)  # the older name of the viewers' password
    assert access.role_for_password(OPERATOR) == "operator"
    assert access.role_for_password(VIEWER) == "viewer"
    assert access.role_for_password("") is None and access.role_for_password(OPERATOR + "x") is None
    token = access.issue_session("viewer", "ip:10.0.0.7")
    found = access.read_session(token)
    assert found is not None and found.role == "viewer" and found.account == "ip:10.0.0.7"


def test_oidc_groups_name_the_role(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_OPERATOR_GROUP", "gpu-admins")
    assert access.role_for_groups(["staff", "gpu-admins"]) == "operator"
    assert access.role_for_groups(["staff"]) == "viewer"
    monkeypatch.setenv("SHOOTOUT_VIEWER_GROUP", "ml-team")
    assert access.role_for_groups(["staff"]) is None  # in neither group: no access
    assert access.role_for_groups("ml-team") == "viewer"


def test_allowed_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    hosts = access.allowed_hosts("127.0.0.1")
    assert access.host_allowed("127.0.0.1:8501", hosts) and access.host_allowed("localhost", hosts)
    assert access.host_allowed("[::1]:8501", hosts)
    assert not access.host_allowed("evil.example:8501", hosts) and not access.host_allowed(None, hosts)
    monkeypatch.setenv("SHOOTOUT_ALLOWED_HOSTS", "shootout.team.example")
    assert access.host_allowed("shootout.team.example", access.allowed_hosts("0.0.0.0"))
    assert access.host_allowed(socket.gethostname(), access.allowed_hosts("0.0.0.0"))


def test_a_viewers_uploads_are_bounded(tmp_path: Path) -> None:
    app = start_served_app(
        tmp_path,
        {
            "SHOOTOUT_VIEWER_PASSWORD": VIEWER,
            "SHOOTOUT_OPERATOR_PASSWORD": OPERATOR,
            "SHOOTOUT_LIMIT_UPLOAD_MB_PER_VIEWER": "1",
        },
    )
    try:
        viewer = {access.SESSION_COOKIE: login(app, VIEWER).cookies[access.SESSION_COOKIE]}
        url = app.url + "/_stcore/upload_file/no-such-session/f1"
        # Under the budget the request reaches Streamlit (which answers 400 or 403 for a session
        # that does not exist); past it the gate answers 429 before Streamlit reads a byte.
        first = httpx2.put(url, content=b"x" * 600_000, cookies=viewer, timeout=10)
        assert first.status_code != 429
        second = httpx2.put(url, content=b"x" * 600_000, cookies=viewer, timeout=10)
        assert second.status_code == 429 and "SHOOTOUT_LIMIT_UPLOAD_MB_PER_VIEWER" in second.text
        operator = {access.SESSION_COOKIE: login(app, OPERATOR).cookies[access.SESSION_COOKIE]}
        assert httpx2.put(url, content=b"x" * 600_000, cookies=operator, timeout=10).status_code != 429
    finally:
        stop(app)


def test_with_oidc_streamlits_own_signed_login_cookie_opens_the_gate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Streamlit's OIDC callback sets `_streamlit_user`, signed with its cookie secret; the gate
    reads it with Streamlit's own reader and takes the role from the group claim."""
    import json

    from streamlit.web.server.server_util import get_cookie_secret
    from streamlit.web.server.starlette.starlette_app_utils import create_signed_value

    from web.gate import viewer_for

    monkeypatch.setenv("SHOOTOUT_OPERATOR_GROUP", "gpu-admins")

    def cookie(user: dict) -> dict[str, str]:
        signed = create_signed_value(get_cookie_secret(), "_streamlit_user", json.dumps(user)).decode()
        return {"cookie": f"_streamlit_user={signed}"}

    admin = {
        "is_logged_in": True,
        "email": "ada@example.org",
        "groups": ["gpu-admins"],
        "origin": "http://x",
    }
    assert viewer_for(cookie(admin), "10.0.0.1", oidc=True) == access.Viewer(
        "operator", "ada@example.org"
    )
    member = {**admin, "email": "bo@example.org", "groups": ["staff"]}
    assert viewer_for(cookie(member), "10.0.0.1", oidc=True) == access.Viewer("viewer", "bo@example.org")
    assert viewer_for(cookie({**admin, "is_logged_in": False}), "10.0.0.1", oidc=True) is None
    forged = {"cookie": "_streamlit_user=" + cookie(admin)["cookie"].split("=", 1)[1][:-3] + "xyz"}
    assert viewer_for(forged, "10.0.0.1", oidc=True) is None
    assert (
        viewer_for({}, "127.0.0.1", oidc=True) is None
    )  # with a login configured, loopback logs in too


# Issue 31, part 2.


def test_a_page_of_another_port_of_the_host_cannot_drive_a_session(served: Served) -> None:
    """Browsers send the cookie to every port of a host, so a host name match is not enough:
    scheme, host and port must be the app's own."""
    cookie = login(served, OPERATOR).cookies[access.SESSION_COOKIE]
    token = page_token_or_none(served, cookie)
    own = f"http://127.0.0.1:{served.port}"
    assert websocket_handshake_status(served.port, cookie, own, token) == 101
    for other in (
        "http://localhost:1",
        f"http://127.0.0.1:{served.port + 1}",
        f"https://127.0.0.1:{served.port}",
    ):
        assert websocket_handshake_status(served.port, cookie, other, token) == 403, other
    post = httpx2.post(
        served.url + "/logout",
        cookies={access.SESSION_COOKIE: cookie},
        headers={"Origin": "http://127.0.0.1:8695"},
        timeout=10,
        follow_redirects=False,
    )
    assert post.status_code == 403


def test_the_websocket_token_is_the_sessions_not_a_planted_cookie(served: Served) -> None:
    """Another port can read and write the `_streamlit_xsrf` cookie: the token must come from
    the login session, so a value planted there (with a matching token) opens nothing."""
    from streamlit.web.server.starlette.starlette_app_utils import (
        decode_xsrf_token_string,
        generate_xsrf_token_string,
    )

    cookie = login(served, OPERATOR).cookies[access.SESSION_COOKIE]
    planted = generate_xsrf_token_string(b"p" * 16, 0)
    assert websocket_handshake_status(served.port, cookie, token=planted, xsrf_cookie=planted) == 403
    assert websocket_handshake_status(served.port, cookie) == 403  # no token at all
    other_login = login(served, VIEWER).cookies[access.SESSION_COOKIE]
    assert websocket_handshake_status(served.port, cookie, token=page_token(served, other_login)) == 403
    # A page load replaces a planted cookie with the session's own value.
    page = httpx2.get(
        served.url + "/", cookies={access.SESSION_COOKIE: cookie, "_streamlit_xsrf": planted}, timeout=10
    )
    replaced = decode_xsrf_token_string(page.cookies["_streamlit_xsrf"])[0]
    assert replaced == decode_xsrf_token_string(page_token(served, cookie))[0] != b"p" * 16


def test_after_login_only_a_plain_path_of_the_app(served: Served) -> None:
    for target in (
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r\n/evil.example",
        "/ /evil.example",
        "/\\evil.example",
        "/\\/evil.example",
        "/\x00/evil.example",
        "///evil.example",
        "https://evil.example",
    ):
        answer = login(served, VIEWER, target)
        assert answer.status_code == 303 and answer.headers["location"] == "/", repr(target)
    assert login(served, VIEWER, "/runs?run=3#top").headers["location"] == "/runs?run=3#top"


def test_x_forwarded_for_is_not_believed_from_loopback(tmp_path: Path) -> None:
    """uvicorn believes X-Forwarded-For from loopback by default: a locked-out client got in by
    adding the header. Only SHOOTOUT_TRUSTED_PROXIES may name the client."""
    app = start_served_app(tmp_path, {"SHOOTOUT_VIEWER_PASSWORD": VIEWER})
    try:
        statuses = [
            httpx2.post(
                app.url + "/login",
                data={"password": f"guess-{i}"},
                headers={"X-Forwarded-For": f"203.0.113.{i}"},
                timeout=10,
            ).status_code
            for i in range(7)
        ]
        assert statuses[6] == 429, statuses
    finally:
        stop(app)
    text = app.log.read_text()
    assert "wrong password from 127.0.0.1" in text and "203.0.113." not in text


def test_trusted_proxies_name_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    assert access.client_of("127.0.0.1", "http", "203.0.113.9", "https") == access.Client(
        "127.0.0.1", "http"
    )
    monkeypatch.setenv("SHOOTOUT_TRUSTED_PROXIES", "10.0.0.5, 10.1.0.0/16")
    # The client may write anything left of what the proxies appended: the nearest untrusted hop wins.
    assert access.client_of(
        "10.0.0.5", "ws", "1.2.3.4, 203.0.113.9, 10.1.2.3", "https"
    ) == access.Client("203.0.113.9", "wss")
    assert access.client_of("10.0.0.6", "http", "203.0.113.9", None) == access.Client("10.0.0.6", "http")


def test_logout_ends_the_session_on_the_server(served: Served) -> None:
    cookie = login(served, VIEWER).cookies[access.SESSION_COOKIE]
    jar = {access.SESSION_COOKIE: cookie}

    def opens() -> bool:
        return (
            httpx2.get(served.url + "/_stcore/host-config", cookies=jar, timeout=10).status_code == 200
        )

    form = httpx2.get(served.url + "/logout", cookies=jar, timeout=10)
    assert form.status_code == 200 and 'method="post"' in form.text
    assert "Log out everywhere" not in form.text  # operators only
    assert opens()  # a GET (a link, an image of another site) logs nobody out
    no_token = httpx2.post(served.url + "/logout", cookies=jar, timeout=10, follow_redirects=False)
    assert no_token.status_code == 403 and opens()
    token = form.text.split('name="token" value="', 1)[1].split('"', 1)[0]
    done = httpx2.post(
        served.url + "/logout", data={"token": token}, cookies=jar, timeout=10, follow_redirects=False
    )
    assert done.status_code == 303 and done.headers["location"] == "/login"
    assert not opens()  # the copy of the cookie is worth nothing now
    assert (
        websocket_handshake_status(served.port, cookie, token=page_token_or_none(served, cookie)) == 403
    )


def page_token_or_none(served: Served, cookie: str) -> str | None:
    page = httpx2.get(served.url + "/", cookies={access.SESSION_COOKIE: cookie}, timeout=10)
    return page.cookies.get("_streamlit_xsrf")


def test_the_operator_logs_out_every_session(tmp_path: Path) -> None:
    app = start_served_app(
        tmp_path, {"SHOOTOUT_OPERATOR_PASSWORD": OPERATOR, "SHOOTOUT_VIEWER_PASSWORD": VIEWER}
    )
    try:
        viewer = {access.SESSION_COOKIE: login(app, VIEWER).cookies[access.SESSION_COOKIE]}
        operator = {access.SESSION_COOKIE: login(app, OPERATOR).cookies[access.SESSION_COOKIE]}

        def token_of(jar: dict[str, str]) -> str:
            page = httpx2.get(app.url + "/logout", cookies=jar, timeout=10).text
            return (
                page.split('name="everywhere" value="1">', 1)[1].split('value="', 1)[1].split('"', 1)[0]
            )

        # A viewer's own logout token does not stand for "everywhere".
        viewer_form = httpx2.get(app.url + "/logout", cookies=viewer, timeout=10).text
        viewer_token = viewer_form.split('name="token" value="', 1)[1].split('"', 1)[0]
        refused = httpx2.post(
            app.url + "/logout",
            data={"token": viewer_token, "everywhere": "1"},
            cookies=viewer,
            timeout=10,
        )
        assert refused.status_code == 403
        done = httpx2.post(
            app.url + "/logout",
            data={"token": token_of(operator), "everywhere": "1"},
            cookies=operator,
            timeout=10,
            follow_redirects=False,
        )
        assert done.status_code == 303
        for jar in (viewer, operator):
            assert (
                httpx2.get(app.url + "/_stcore/host-config", cookies=jar, timeout=10).status_code == 401
            )
    finally:
        stop(app)


def _stored_hash(token: str) -> str:
    return hashlib.sha256((access.session_id(token) or "").encode()).hexdigest()


def test_a_changed_password_ends_the_sessions_it_opened(
    monkeypatch: pytest.MonkeyPatch, db_url: str
) -> None:
    monkeypatch.setenv("SHOOTOUT_VIEWER_PASSWORD", VIEWER)
    monkeypatch.setenv("SHOOTOUT_OPERATOR_PASSWORD", OPERATOR)
    viewer, operator = (
        access.issue_session("viewer", "ip:10.0.0.7"),
        access.issue_session("operator", "ip:x"),
    )
    assert access.read_session(viewer) == access.Viewer(
        "viewer", access.login_identity("ip:10.0.0.7", _stored_hash(viewer))
    )
    monkeypatch.setenv("SHOOTOUT_VIEWER_PASSWORD", VIEWER + "-changed")
    assert access.read_session(viewer) is None
    assert access.read_session(operator) == access.Viewer(  # its password held
        "operator", access.login_identity("ip:x", _stored_hash(operator))
    )
    from db.models import LoginSession
    from db.session import session_scope

    with session_scope() as session:  # the database holds no session id, only its hash
        stored = {row.id_hash for row in session.query(LoginSession)}
    assert access.session_id(viewer) not in stored and len(stored) == 2


def test_a_connection_that_never_finishes_its_headers_is_closed(tmp_path: Path) -> None:
    app = start_served_app(
        tmp_path, {"SHOOTOUT_VIEWER_PASSWORD": VIEWER, "SHOOTOUT_HEADER_TIMEOUT_S": "1"}
    )
    try:
        with socket.create_connection(("127.0.0.1", app.port), timeout=8) as sock:
            sock.sendall(b"GET /_stcore/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and nothing more
            started = time.monotonic()
            assert sock.recv(4096) == b""  # closed by the server, not by our 8 s timeout
            assert time.monotonic() - started < 5
        # After a complete request on a kept-alive connection, the next headers are timed too.
        with socket.create_connection(("127.0.0.1", app.port), timeout=8) as sock:
            sock.sendall(b"GET /_stcore/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            first = b""
            while not first.endswith(b"\r\n\r\nok"):  # the whole first response, however it is split
                chunk = sock.recv(4096)
                assert chunk, first
                first += chunk
            assert b" 200 " in first.split(b"\r\n", 1)[0]
            sock.sendall(b"GET /_stcore/health HTTP/1.1\r\n")
            for _ in range(6):  # a byte every 0.5 s keeps uvicorn's keep-alive timer from firing
                time.sleep(0.5)
                try:
                    sock.sendall(b"X")
                except OSError:
                    break
            sock.settimeout(3)
            assert sock.recv(4096) == b""
    finally:
        stop(app)


def test_a_websocket_to_the_login_is_refused_not_an_error(served: Served) -> None:
    for path in ("/login", "/logout"):
        assert websocket_handshake_status(served.port, path=path) == 403, path
    assert "Traceback" not in served.log.read_text()


def test_rows_of_long_expired_sessions_are_dropped(monkeypatch: pytest.MonkeyPatch, db_url: str) -> None:
    from datetime import UTC, datetime, timedelta

    from db.models import LoginSession
    from db.session import session_scope

    monkeypatch.setenv("SHOOTOUT_VIEWER_PASSWORD", VIEWER)
    old = access.issue_session("viewer", "ip:10.0.0.7")
    with session_scope() as session:
        for row in session.query(LoginSession):
            row.expires_at = datetime.now(UTC) - timedelta(days=2)
    assert access.read_session(old) is None
    access.issue_session("viewer", "ip:10.0.0.8")  # the next login sweeps
    with session_scope() as session:
        assert [row.identity for row in session.query(LoginSession)] == ["ip:10.0.0.8"]


def test_a_checked_session_is_read_from_memory_for_a_second(
    monkeypatch: pytest.MonkeyPatch, db_url: str
) -> None:
    """A page load's dozens of requests read the session row once; a revocation made by another
    process (here: straight in the database) holds within SESSION_RECHECK_S."""
    from datetime import UTC, datetime

    from db.models import LoginSession
    from db.session import session_scope

    monkeypatch.setenv("SHOOTOUT_VIEWER_PASSWORD", VIEWER)
    token = access.issue_session("viewer", "ip:10.0.0.7")
    assert access.read_session(token) is not None
    with session_scope() as session:
        for row in session.query(LoginSession):
            row.revoked_at = datetime.now(UTC)
    assert access.read_session(token) is not None  # from memory
    monkeypatch.setattr(access, "SESSION_RECHECK_S", 0.0)
    assert access.read_session(token) is None


def test_each_browser_gets_an_id_once_that_no_script_reads(served: Served) -> None:
    """Who a participant is where no login tells people apart (votes, session seats): a
    random id per browser, set on the first page load, kept after it, HttpOnly."""
    cookie = login(served, OPERATOR).cookies[access.SESSION_COOKIE]
    first = httpx2.get(served.url + "/", cookies={access.SESSION_COOKIE: cookie}, timeout=10)
    browser = first.cookies[access.BROWSER_COOKIE]
    assert access.browser_id(browser) == browser
    header = next(
        value
        for key, value in first.headers.multi_items()
        if key == "set-cookie" and access.BROWSER_COOKIE in value
    )
    assert "HttpOnly" in header and "SameSite=Strict" in header and "Max-Age=" in header
    again = httpx2.get(
        served.url + "/",
        cookies={access.SESSION_COOKIE: cookie, access.BROWSER_COOKIE: browser},
        timeout=10,
    )
    assert access.BROWSER_COOKIE not in again.cookies
    # Anything else in that cookie is no id: the browser gets a real one.
    odd = httpx2.get(
        served.url + "/",
        cookies={access.SESSION_COOKIE: cookie, access.BROWSER_COOKIE: "admin"},
        timeout=10,
    )
    assert access.browser_id(odd.cookies[access.BROWSER_COOKIE]) is not None
    # Nothing is set before a login: the refusal carries no id.
    refused = httpx2.get(served.url + "/_stcore/host-config", timeout=10)
    assert refused.status_code == 401 and access.BROWSER_COOKIE not in refused.cookies


def test_a_browser_id_is_only_what_the_gate_sets() -> None:
    made = access.new_browser_id()
    assert access.browser_id(made) == made
    for bad in (None, "", "short", made[:-1] + "!", made + "x", "é" * 32):
        assert access.browser_id(bad) is None
