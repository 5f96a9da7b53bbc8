"""Issue 56: SHOOTOUT_VOTES_PER_ADDRESS did not cap loopback. Streamlit reports a client on
127.0.0.1 as no address at all, so with the cap at 1, three fresh logins through a reverse proxy
on the same host all counted ("3 with no address stored"). Loopback is one address for the cap,
unless SHOOTOUT_TRUSTED_PROXIES names the proxy: then the address it forwards counts.

The served app (`streamlit run serve.py`) in Chromium, each login its own browser."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from services.team import access
from tests.e2e.conftest import assert_no_exception, wait_for_app
from tests.services.playground.test_votes import stored_exchange
from tests.support.scripted_server import ScriptedServer
from tests.support.served import start_served_app, stop

pytestmark = pytest.mark.e2e

PASSWORD = "viewer-vote-cap-1"
ENGINES = ("cap-east", "cap-west")


def _vote(browser, browser_context_args, url: str, forwarded_for: str | None) -> str:  # type: ignore[no-untyped-def]
    """One fresh password login (from loopback, or through the proxy for `forwarded_for`)
    votes on the exchange at `url`; the page's text after."""
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    base = url.split("/playground")[0]
    login = httpx2.post(
        base + "/login",
        data={"password": PASSWORD, "next": "/"},
        headers=headers,
        timeout=10,
        follow_redirects=False,
    )
    assert login.status_code == 303, login.text
    context = browser.new_context(**browser_context_args, extra_http_headers=headers)
    try:
        context.add_cookies(
            [{"name": access.SESSION_COOKIE, "value": login.cookies[access.SESSION_COOKIE], "url": base}]
        )
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(url)
        wait_for_app(page)
        page.get_by_role("button", name="No clear winner").click()
        wait_for_app(page)
        page.get_by_role("button", name="Confirm vote").click()
        wait_for_app(page)
        assert_no_exception(page)
        return page.locator("[data-testid='stMain']").inner_text()
    finally:
        context.close()


@pytest.mark.parametrize("proxied", [False, True], ids=["loopback", "trusted-proxy"])
def test_the_vote_cap_counts_loopback_as_one_address(  # type: ignore[no-untyped-def]
    proxied: bool, browser, browser_context_args, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from db.session import dispose_all
    from services.engines import endpoints
    from services.playground import live_tally

    env = {"SHOOTOUT_VIEWER_PASSWORD": PASSWORD, "SHOOTOUT_VOTES_PER_ADDRESS": "1"}
    if proxied:
        env["SHOOTOUT_TRUSTED_PROXIES"] = "127.0.0.1"
    served = start_served_app(tmp_path, env)
    try:
        monkeypatch.setenv("SHOOTOUT_DATABASE_URL", f"sqlite:///{tmp_path / 'shootout.db'}")
        with ScriptedServer() as server:  # the Playground shows an exchange once two engines exist
            for name in ENGINES:
                endpoints.add_engine(name, server.base_url, model=server.model(tokens=2))
        run_id = stored_exchange(list(ENGINES))
        url = f"{served.url}/playground?exchange={run_id}"
        texts = [
            _vote(browser, browser_context_args, url, f"198.51.100.{n + 1}" if proxied else None)
            for n in range(3)
        ]
        found = live_tally.exchange_tally(run_id)
        refused = [t for t in texts if "SHOOTOUT_VOTES_PER_ADDRESS" in t]
        if proxied:  # three addresses the proxy forwarded: each one's vote counts
            assert (found.voters, found.per_address, found.no_address) == (3, (1, 1, 1), 0)
            assert refused == []
        else:  # three logins from loopback: one address, one vote
            assert (found.voters, found.per_address, found.no_address) == (1, (1,), 0)
            assert len(refused) == 2
    finally:
        dispose_all()
        stop(served)
