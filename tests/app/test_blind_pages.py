"""Issue 45 over every page that takes a run id in its address, in AppTest: a hidden blind
exchange's engines and per-engine figures show on none of them (the run page shows its answers
by blind label; the others refuse it or do not list it)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO_ROOT
from tests.services.runstate.test_blind_surfaces import _leaks, hidden_exchange

#: page -> the address parameter that names a run.
PAGES = {
    "runs": "run",
    "runs compare": "compare",
    "benchmarks": "run",
    "demos": "run",
    "parity": "run",
    "playground": "exchange",
}


def _shown(at: AppTest) -> str:
    parts: list[str] = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "info",
        "warning",
        "error",
        "success",
    ):
        parts += [str(e.value) for e in at.get(kind)]
    parts += [e.value.to_string() for e in at.dataframe]
    parts += [str(e.value) for e in at.get("json")]
    parts += [str(getattr(e, "options", "")) for e in at.selectbox]
    return "\n".join(parts)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_page_names_an_engine_of_a_hidden_exchange(db_url: str, page: str) -> None:
    run_id = hidden_exchange()
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / f"{page.split()[0]}.py"), default_timeout=60)
    at.query_params[PAGES[page]] = str(run_id)
    at.run()
    assert not at.exception, at.exception
    shown = _shown(at)
    assert not _leaks(shown), (page, _leaks(shown))
    if page == "runs":  # the exchange itself shows, by blind label
        assert "Answer A" in shown and "Answer B" in shown, shown


# Issue 56: what the Playground says about a hidden exchange, beyond its visible names.
KINDS = {"alpha": "openai", "beta": "llamacpp", "gamma": "vllm"}
#: What would say which engine an answer is: the registered names, their kinds' words, models.
ENGINE_WORDS = ("alpha", "beta", "gamma", "OpenAI-compatible", "llama.cpp", "llamacpp", "scripted:")


@pytest.fixture
def three_kinds(db_url: str, scripted_server) -> list[str]:  # type: ignore[no-untyped-def]
    from services.engines import endpoints

    for salt, (name, kind) in enumerate(KINDS.items()):
        endpoints.add_engine(
            name, scripted_server.base_url, kind=kind, model=scripted_server.model(tokens=6, salt=salt)
        )
    return list(KINDS)


def _words(text: str) -> list[str]:
    return [word for word in ENGINE_WORDS if word in text]


def _send_blind_with_extras() -> tuple[AppTest, int]:
    """Alpha (no top_k, no min_tokens) and beta (llama.cpp: no min_tokens), blind, top_k and
    min_tokens set: both answers carry a note."""
    from tests.app.test_playground_page import page, run_until_idle

    at = page().run()
    at.multiselect(key="pg_engines").set_value(["alpha", "beta"])
    at.number_input(key="pg_top_k").set_value(40)
    at.number_input(key="pg_min_tokens").set_value(2)
    at.toggle(key="pg_blind").set_value(True)
    at.text_area(key="pg_prompt").set_value("Which of you wrote this?")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    assert not at.exception, at.exception
    return at, at.session_state["pg_run_id"]


def _notes(at: AppTest) -> list[str]:
    """The answers' notes as read (markdown's escapes taken out)."""
    return [c.value.replace("\\", "") for c in at.caption if "does not take" in c.value]


def test_a_hidden_answers_notes_name_no_engine_on_the_senders_screen_or_another(
    three_kinds: list[str],
) -> None:
    from tests.app.test_playground_page import opened

    sender, run_id = _send_blind_with_extras()
    other = opened(run_id)
    assert not other.exception, other.exception
    for at in (sender, other):
        notes = _notes(at)
        # The same pooled notes under both answers: none points at the kind that lacks top_k.
        assert len(notes) % 2 == 0 and notes[: len(notes) // 2] == notes[len(notes) // 2 :], notes
        assert all(n.startswith(":material/info: An engine in this exchange ") for n in notes), notes
        assert any("does not take top_k, min_tokens: not sent." in n for n in notes), notes
        assert not _words(" ".join(notes)), notes
        # Nothing else on screen names them either: not the recent exchanges (item 5).
        assert not _words(_shown(at)), _words(_shown(at))


def test_opening_a_hidden_exchange_leaves_the_engine_picker_as_it_was(three_kinds: list[str]) -> None:
    from tests.app.test_playground_page import opened, page

    _, run_id = _send_blind_with_extras()
    fresh = page().run()
    before = list(fresh.multiselect(key="pg_engines").value)
    assert sorted(before) == sorted(three_kinds)  # the default pick: all three
    fresh.button(key=f"pg_open_{run_id}").click().run()
    assert not fresh.exception
    assert fresh.session_state["pg_run_id"] == run_id
    assert list(fresh.multiselect(key="pg_engines").value) == before
    assert fresh.session_state["pg_top_k"] == 40  # the settings still come back
    assert list(opened(run_id).multiselect(key="pg_engines").value) == before
