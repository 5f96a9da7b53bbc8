"""Issue 31 in the browser: a page served from another port of the app's host (any local program
can serve one) cannot use the operator's login. The browser sends the session cookie there, and
the page can read the `_streamlit_xsrf` cookie; the gate still refuses its websocket, while the
app's own page, in the same browser, connects."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.e2e.conftest import screenshot, wait_for_app
from tests.support.served import Served, start_served_app, stop

pytestmark = pytest.mark.e2e

OPERATOR, VIEWER = "op-cross-port", "viewer-cross-port"

PROBE = """<!doctype html><html><body><p id=out>probing</p><script>
window.probe = (url) => new Promise((resolve) => {
  const token = (document.cookie.match(/(?:^|; )_streamlit_xsrf=([^;]*)/) || [])[1];
  const ws = new WebSocket(url, token ? ["streamlit", token] : ["streamlit"]);
  ws.onopen = () => { ws.close(); resolve({opened: true, sawToken: !!token}); };
  ws.onerror = () => resolve({opened: false, sawToken: !!token});
});
</script></body></html>"""


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    app = start_served_app(
        tmp_path_factory.mktemp("cross-port"),
        {"SHOOTOUT_OPERATOR_PASSWORD": OPERATOR, "SHOOTOUT_VIEWER_PASSWORD": VIEWER},
    )
    yield app
    stop(app)


@pytest.fixture
def other_port() -> Iterator[str]:
    """Another web server on 127.0.0.1, as any local program or a developer's dev server is."""

    class Probe(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PROBE.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Probe)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_page_on_another_port_cannot_open_the_apps_websocket(
    team_server: Served, other_port: str, page
) -> None:  # type: ignore[no-untyped-def]
    page.set_default_timeout(60_000)
    page.goto(f"{team_server.url}/login")
    page.fill("input[name=password]", OPERATOR)
    page.click("button[type=submit]")
    wait_for_app(page)  # the app's own page connects: its token is the session's
    assert page.get_by_text("Signed in as operator").is_visible()
    stream = f"ws://127.0.0.1:{team_server.port}/_stcore/stream"
    own = page.evaluate(
        "(url) => new Promise(r => { const t = document.cookie.match(/_streamlit_xsrf=([^;]*)/)[1];"
        " const ws = new WebSocket(url, ['streamlit', t]); ws.onopen = () => { ws.close(); r(true); };"
        " ws.onerror = () => r(false); })",
        stream,
    )
    assert own is True

    other = page.context.new_page()
    other.goto(other_port)
    result = other.evaluate("(url) => window.probe(url)", stream)
    screenshot(other, "cross_port_probe")
    assert result["sawToken"] is True  # the premise: cookies are shared across ports of a host
    assert result["opened"] is False
    assert "refused Origin 'http://127.0.0.1:" in team_server.log.read_text()


def test_a_page_on_another_port_cannot_frame_the_app(team_server: Served, other_port: str, page) -> None:  # type: ignore[no-untyped-def]
    """Issue 44, item 11: the browser sends the session cookie to a frame of the app inside a
    page of another port (same site), so that page could show the operator's app and have them
    click in it. The frame headers make the browser refuse to draw it."""
    page.set_default_timeout(60_000)
    page.goto(f"{team_server.url}/login")
    page.fill("input[name=password]", OPERATOR)
    page.click("button[type=submit]")
    wait_for_app(page)
    other = page.context.new_page()
    other.goto(other_port)
    other.evaluate(
        "(url) => new Promise(r => { const f = document.createElement('iframe'); f.src = url;"
        " f.width = 1000; f.height = 700; f.onload = () => r(true); document.body.appendChild(f); })",
        f"{team_server.url}/engines",
    )
    other.wait_for_timeout(3_000)  # time enough for the app to draw, had it been allowed to
    child = next(frame for frame in other.frames if frame != other.main_frame)
    screenshot(other, "cross_port_frame")
    assert child.locator("[data-testid='stApp']").count() == 0
