"""Issue 3 end to end: one prompt to three local engines in Chromium; three answers
stream into their columns with their timings, and the exchange lands in the history."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, pick_engines, screenshot, wait_for_app

pytestmark = [pytest.mark.e2e, pytest.mark.engines]

ENGINES = ["llamacpp-4slot", "vllm-cpu", "llamacpp-1slot"]


@pytest.fixture
def engines_in_app(app_server, all_local_engines_up, monkeypatch):  # type: ignore[no-untyped-def]
    """Exactly the local engines registered in the browser app's own database (other browser
    tests share that app and register engines of their own)."""
    from db.session import dispose_all
    from services import local_engines
    from services.engines import endpoints

    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    for record in endpoints.list_engines():
        endpoints.remove_engine(record.name)
    # The three it compares, so all three are the page's default choice (the first three).
    records = [endpoints.register_local(local_engines.get_spec(name)) for name in ENGINES]
    dispose_all()
    return records


def test_three_engines_side_by_side(app_page, app_server, engines_in_app) -> None:  # type: ignore[no-untyped-def]
    page = app_page
    page.goto(app_server.url)
    wait_for_app(page)
    pick_engines(page, ENGINES)
    page.locator("[data-testid='stExpander'] summary", has_text="Parameters").click()
    page.locator(".st-key-pg_max_tokens input").fill("24")
    page.locator(".st-key-pg_max_tokens input").press("Enter")
    wait_for_app(page)
    page.locator(".st-key-pg_prompt textarea").fill("Name three colours of the sky, briefly.")
    page.locator(".st-key-pg_send button").click()
    # While streaming the panel refreshes itself; when all three are done the page reruns once
    # and the Stop button is disabled again.
    page.get_by_text("First token:").wait_for(timeout=120_000)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stCaptionContainer\"]').length > 0 && "
        "[...document.querySelectorAll('p')].filter(p => p.innerText.trim() === 'finished').length >= 3",
        timeout=180_000,
    )
    wait_for_app(page)
    assert_no_exception(page)
    body = page.locator("[data-testid='stMain']").inner_text()
    for name in ENGINES:
        assert name in body
    assert body.count("TTFT") >= 3
    assert "completion 24" in body or "completion" in body
    screenshot(page, "playground-three-engines")
    # The exchange is in the history (Runs page), with its three answers.
    from sqlalchemy import select

    from db.models import Exchange, Run
    from db.session import dispose_all, session_scope

    with session_scope() as session:
        run = session.scalars(
            select(Run).where(Run.kind == "playground").order_by(Run.id.desc())
        ).first()
        engines = sorted(session.scalars(select(Exchange.engine_name).where(Exchange.run_id == run.id)))
        run_id = run.id
    dispose_all()
    assert engines == sorted(ENGINES)
    page.goto(f"{app_server.url}/runs?run={run_id}")
    wait_for_app(page)
    text = page.locator("[data-testid='stMain']").inner_text()
    assert f"Run #{run_id}" in text and "Playground answers" in text
    screenshot(page, "runs-after-playground")
