"""The Engines page in AppTest: lists engines, reports bad input without a traceback."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from services.engines import endpoints
from services.fleet import view as engines_view
from tests.conftest import REPO_ROOT
from tests.support.forms import enter_submits


def engines_page() -> AppTest:
    return AppTest.from_file(str(REPO_ROOT / "app_pages" / "engines.py"), default_timeout=60)


def test_empty_registry(db_url: str) -> None:
    at = engines_page().run()
    assert not at.exception
    assert any("No engines yet" in i.value for i in at.info)


def test_add_form_rejects_bad_url(db_url: str) -> None:
    at = engines_page().run()
    at.text_input(key="add_name").set_value("x")
    at.text_input(key="add_url").set_value("ftp://nowhere")
    submit = next(b for b in at.get("button") if getattr(b, "label", "") == "Probe and add")
    submit.click().run()
    assert not at.exception
    assert any("Unsupported URL scheme" in e.value for e in at.error)
    assert endpoints.list_engines() == []


def test_enter_in_a_field_does_not_probe_and_add(db_url: str) -> None:
    """Only "Probe and add" contacts a server and stores it, not Enter in the name or URL."""
    at = engines_page().run()
    assert not at.exception
    assert enter_submits(at)["add_engine_form"] is False


@pytest.mark.engines
def test_lists_local_engines(local_engines) -> None:  # type: ignore[no-untyped-def]
    at = engines_page().run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    for name in ("llamacpp-4slot", "vllm-cpu", "llamacpp-1slot"):
        assert name in text


def test_an_endpoint_added_is_listed_in_the_same_run(db_url: str) -> None:
    at = engines_page().run()
    at.text_input(key="add_name").set_value("later")
    at.text_input(key="add_url").set_value("http://127.0.0.1:9")
    at.checkbox(key="add_force").check()
    submit = next(b for b in at.get("button") if getattr(b, "label", "") == "Probe and add")
    submit.click().run()
    assert not at.exception
    assert any("Added" in s.value for s in at.success)
    assert any("later" in m.value for m in at.markdown)
    assert [e.name for e in endpoints.list_engines()] == ["later"]


def _probe_and_add(at: AppTest, name: str, url: str) -> AppTest:
    at.text_input(key="add_name").set_value(name)
    at.text_input(key="add_url").set_value(url)
    at.checkbox(key="add_force").check()
    submit = next(b for b in at.get("button") if getattr(b, "label", "") == "Probe and add")
    return submit.click().run()


def test_a_second_name_for_a_registered_url_asks_before_it_is_stored(db_url: str) -> None:
    at = _probe_and_add(engines_page().run(), "first", "http://127.0.0.1:9")
    _probe_and_add(at, "second", "http://127.0.0.1:9/v1")
    assert not at.exception
    assert any("Not stored: first already point(s) at" in w.value for w in at.warning)
    assert [e.name for e in endpoints.list_engines()] == ["first"]
    at.checkbox(key="add_same_url").check()
    _probe_and_add(at, "second", "http://127.0.0.1:9/v1")
    assert any("Added **second**" in s.value for s in at.success)
    assert sorted(e.name for e in endpoints.list_engines()) == ["first", "second"]


def test_stop_on_a_shared_local_engine_asks_first(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local engines are shared: one click on Stop only asks, naming what would fail."""
    row = engines_view.LocalRow("local-x", "**local-x**", "running", failed=False, action="stop")
    stopped: list[str] = []
    monkeypatch.setattr(engines_view, "local_panel", lambda: engines_view.LocalPanel([row], False))
    monkeypatch.setattr(engines_view, "stop_local", stopped.append)
    at = engines_page().run()
    at.button(key="local_stop_local-x").click().run()
    assert not at.exception and stopped == []
    assert any("Stop **local-x** for everyone?" in w.value for w in at.warning)
    at.button(key="local_stop_no").click().run()
    assert stopped == [] and not any("for everyone?" in w.value for w in at.warning)
    at.button(key="local_stop_local-x").click().run()
    at.button(key="local_stop_yes").click().run()
    assert not at.exception and stopped == ["local-x"]


def test_a_currency_formatted_price_is_an_error_box_and_nothing_is_stored(db_url: str) -> None:
    """Issue 33: "$3.50" in the price field reads as a message, never a traceback or a store."""
    at = engines_page().run()
    at.text_input(key="add_name").set_value("gpu")
    at.text_input(key="add_url").set_value("http://127.0.0.1:9")
    at.text_input(key="add_usd_per_hour").set_value("$3.50")
    at.checkbox(key="add_force").check()
    submit = next(b for b in at.get("button") if getattr(b, "label", "") == "Probe and add")
    submit.click().run()
    assert not at.exception
    assert any("not a plain number" in e.value for e in at.error)
    assert endpoints.list_engines() == []


def _rows(*actions: str) -> list[engines_view.LocalRow]:
    return [
        engines_view.LocalRow(f"local-{n}", f"**local-{n}**", "x", failed=False, action=action)  # type: ignore[arg-type]
        for n, action in enumerate(actions)
    ]


def test_start_all_is_offered_only_while_some_engine_can_start(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 56: "Start all local engines" was offered while all six ran."""
    monkeypatch.setattr(
        engines_view, "local_panel", lambda: engines_view.LocalPanel(_rows(*["stop"] * 6), False)
    )
    at = engines_page().run()
    assert not at.exception
    assert not [b for b in at.button if b.key == "local_up_all"]
    monkeypatch.setattr(
        engines_view, "local_panel", lambda: engines_view.LocalPanel(_rows("stop", "start"), False)
    )
    at = engines_page().run()
    assert [b for b in at.button if b.key == "local_up_all"]
