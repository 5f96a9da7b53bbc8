"""Issue 20 in the browser: a team server with an operator and a viewer password. The login
sits in front of Streamlit, a shared address survives it, and a viewer sees no operator controls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app
from tests.support.served import Served, start_served_app, stop

pytestmark = pytest.mark.e2e

OPERATOR, VIEWER = "op-e2e-secret", "viewer-e2e-secret"


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("team")
    app = start_served_app(
        data, {"SHOOTOUT_OPERATOR_PASSWORD": OPERATOR, "SHOOTOUT_VIEWER_PASSWORD": VIEWER}
    )
    yield app
    stop(app)


def _stored_run(data_dir: Path) -> int:
    import os

    from db.models import Run
    from db.session import dispose_all, session_scope

    old = os.environ.get("SHOOTOUT_DATABASE_URL")
    os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{data_dir / 'shootout.db'}"
    try:
        with session_scope() as session:
            run = Run(kind="benchmark", name="shared-with-the-team", status="finished", summary={})
            session.add(run)
            session.flush()
            return run.id
    finally:
        dispose_all()
        if old is None:
            os.environ.pop("SHOOTOUT_DATABASE_URL")
        else:
            os.environ["SHOOTOUT_DATABASE_URL"] = old


def _log_in(page, password: str) -> None:  # type: ignore[no-untyped-def]
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


def test_a_viewer_logs_in_lands_on_the_shared_address_and_sees_no_operator_controls(
    team_server: Served, page
) -> None:  # type: ignore[no-untyped-def]
    page.set_default_timeout(60_000)
    run_id = _stored_run(team_server.log.parent)
    page.goto(f"{team_server.url}/runs?run={run_id}")
    assert page.url.startswith(f"{team_server.url}/login?next=")  # nothing of Streamlit loaded
    assert page.locator("[data-testid='stApp']").count() == 0
    _log_in(page, "not-the-password")
    assert page.get_by_text("Wrong password.").is_visible()
    screenshot(page, "team_login_wrong")
    _log_in(page, VIEWER)
    wait_for_app(page)
    assert page.url == f"{team_server.url}/runs?run={run_id}"  # the deep link survived the login
    page.get_by_text("shared-with-the-team").first.wait_for()
    assert page.get_by_text("Signed in as viewer").is_visible()
    assert page.get_by_role("button", name="Delete…").count() == 0
    assert_no_exception(page)
    screenshot(page, "team_viewer_run")
    page.goto(f"{team_server.url}/engines")
    wait_for_app(page)
    assert page.get_by_text(
        "Only an operator may start, stop, add, edit or remove engines"
    ).first.is_visible()
    assert page.get_by_role("button", name="Probe and add").count() == 0
    screenshot(page, "team_viewer_engines")
    # Streamlit's upload endpoint is out of reach without the session cookie, even from this page.
    status = page.evaluate(
        "() => fetch('/_stcore/upload_file/x/y', {method: 'PUT', body: 'x', credentials: 'omit'})"
        ".then(r => r.status)"
    )
    assert status == 401


def test_the_operator_password_opens_the_operator_controls(team_server: Served, browser) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{team_server.url}/engines")
        _log_in(page, OPERATOR)
        wait_for_app(page)
        assert page.url == f"{team_server.url}/engines"
        page.get_by_text("Add an endpoint").first.click()
        assert page.get_by_role("button", name="Probe and add").is_visible()
        assert page.get_by_text("Signed in as operator").is_visible()
        screenshot(page, "team_operator_engines")
        page.goto(f"{team_server.url}/logout")  # the logout page: a form, then a POST
        assert page.get_by_role("button", name="Log out everywhere").is_visible()  # operators only
        page.get_by_role("button", name="Log out", exact=True).click()
        page.wait_for_url(f"{team_server.url}/login")
        page.goto(f"{team_server.url}/engines")
        assert page.url.startswith(f"{team_server.url}/login?next=")  # the cookie is gone
    finally:
        context.close()


def test_log_out_in_place_ends_the_other_tabs_and_nothing_is_fetched_from_outside(
    team_server: Served, browser
) -> None:  # type: ignore[no-untyped-def]
    """Issue 44, items 5 and 16: the sidebar's "Log out" opened the logout form in a new tab and
    left this one signed in, and another open tab went on acting for the ended login; and the
    favicon made every page fetch from a font CDN."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    outside: list[str] = []
    context.on(
        "request",
        lambda request: (
            None
            if request.url.startswith((team_server.url, "data:", "blob:"))
            else outside.append(request.url)
        ),
    )
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{team_server.url}/engines")
        _log_in(page, OPERATOR)
        wait_for_app(page)
        other = context.new_page()
        other.set_default_timeout(60_000)
        other.goto(f"{team_server.url}/runs")
        wait_for_app(other)
        icon = page.evaluate("() => document.querySelector(\"link[rel='shortcut icon']\").href")
        assert icon.startswith("data:image/svg+xml"), icon
        screenshot(page, "team_sidebar_logout")
        sidebar = page.locator("[data-testid='stSidebar']")
        # Operators reach "Log out everywhere" from the sidebar, on the page that explains it.
        everywhere = sidebar.get_by_role("link", name="Log out everywhere…")
        assert everywhere.get_attribute("href") == "/logout"
        assert everywhere.get_attribute("target") is None  # this tab
        sidebar.get_by_role("button", name="Log out").click()
        page.wait_for_url(f"{team_server.url}/login")  # this tab, at once
        assert page.locator("input[name=password]").is_visible()
        assert len(context.pages) == 2  # no new tab
        screenshot(page, "team_logged_out_in_place")
        # The other tab's websocket is closed by the server: it can no longer act for the login.
        other.wait_for_function(
            "() => document.querySelector(\"[data-testid='stApp']\")"
            ".getAttribute('data-test-connection-state') !== 'CONNECTED'",
            timeout=15_000,
        )
        other.reload()
        assert other.url.startswith(f"{team_server.url}/login?next=")
        assert outside == []
    finally:
        context.close()
