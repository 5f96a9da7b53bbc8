"""Issue 8 in the browser: a hostile answer (HTML, script, event handlers, a javascript:
link) is shown as inert text; nothing of it runs or becomes markup."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app
from tests.support.scripted_server import ScriptedServer

pytestmark = pytest.mark.e2e

HOSTILE = (
    "<script>window.__pwned = 'script'</script>"
    "<img src=x onerror=\"window.__pwned='img'\">"
    "<iframe src=\"javascript:window.__pwned='iframe'\"></iframe>"
    " [click me](javascript:window.__pwned='link') <b onmouseover=\"window.__pwned='hover'\">bold?</b> END"
)


def _stream_file(path) -> None:  # type: ignore[no-untyped-def]
    chunks = [HOSTILE[i : i + 12] for i in range(0, len(HOSTILE), 12)]
    events = []
    for i, text in enumerate(chunks):
        delta = {"role": "assistant", "content": text} if i == 0 else {"content": text}
        events.append(
            {
                "id": "x",
                "object": "chat.completion.chunk",
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
        )
    events.append(
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
    )
    events.append(
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [],
            "usage": {
                "prompt_tokens": 5,
                "completion_tokens": len(chunks),
                "total_tokens": 5 + len(chunks),
            },
        }
    )
    path.write_text("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n")


def test_hostile_answer_is_inert(app_page, app_server, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from db.session import dispose_all
    from services.engines import endpoints

    _stream_file(tmp_path / "hostile.txt")
    with ScriptedServer(replay_dir=tmp_path) as server:
        monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
        for record in endpoints.list_engines():
            endpoints.remove_engine(record.name)
        endpoints.add_engine("hostile-a", server.base_url, model="scripted:replay=hostile.txt,itl=1")
        endpoints.add_engine("hostile-b", server.base_url, model="scripted:replay=hostile.txt,itl=1")
        dispose_all()
        page = app_page
        page.goto(app_server.url)
        wait_for_app(page)
        page.locator(".st-key-pg_prompt textarea").fill("Say something nasty")
        page.locator(".st-key-pg_send button").click()
        page.get_by_text("END").first.wait_for(timeout=60_000)
        page.wait_for_function(
            "() => [...document.querySelectorAll('p')].filter(p => p.innerText.trim() === 'finished').length >= 2",
            timeout=60_000,
        )
        wait_for_app(page)
        main = page.locator("[data-testid='stMain']")
        # Fire every handler an injected element could carry.
        page.evaluate(
            "() => document.querySelectorAll(\"[data-testid='stMain'] *\").forEach(e => "
            "['mouseover', 'click', 'error', 'load'].forEach(t => { if (t !== 'click' || e.tagName !== 'A') "
            "e.dispatchEvent(new Event(t)); }))"
        )
        assert page.evaluate("() => window.__pwned") is None
        assert main.locator("script, iframe, img[onerror], [onmouseover]").count() == 0
        assert main.locator("a[href^='javascript']").count() == 0
        assert_no_exception(page)
        screenshot(page, "playground-hostile-answer")
        for name in ("hostile-a", "hostile-b"):
            endpoints.remove_engine(name)
        dispose_all()
