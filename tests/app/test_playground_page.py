"""The Playground page in AppTest against the scripted server: send, live columns, errors in
words, stop, blind votes, history. (The Chromium run against the local engines is in tests/e2e.)"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from services import playground
from services.engines import endpoints
from services.playground import votes as playground_votes
from services.team.access import Viewer
from tests.conftest import REPO_ROOT
from tests.support.scripted_server import WORDS, ScriptedServer


def page() -> AppTest:
    return AppTest.from_file(str(REPO_ROOT / "app_pages" / "playground.py"), default_timeout=30)


def texts(at: AppTest) -> str:
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def run_until_idle(at: AppTest, seconds: float = 30) -> AppTest:
    """AppTest does not fire run_every timers: rerun until the exchange is no longer streaming."""
    deadline = time.monotonic() + seconds
    at.run()
    while time.monotonic() < deadline:
        run_id = at.session_state["pg_run_id"]
        if run_id is None or not playground.is_active(run_id):
            break
        time.sleep(0.2)
        at.run()
    return at.run()


@pytest.fixture
def two_engines(db_url: str, scripted_server: ScriptedServer) -> list[str]:
    endpoints.add_engine(
        "alpha", scripted_server.base_url, model=scripted_server.model(ttft=20, itl=2, tokens=6)
    )
    endpoints.add_engine(
        "beta",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=80, itl=4, tokens=6, salt=2, cached=0),
    )
    return ["alpha", "beta"]


def test_asks_for_engines_when_fewer_than_two(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No local engine coming either (the suite's own may be starting: the waiting room then).
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path / "engines"))
    at = page().run()
    assert not at.exception
    assert any("at least two engines" in i.value for i in at.info)


def test_send_streams_both_columns_with_measurements(two_engines: list[str]) -> None:
    at = page().run()
    assert at.multiselect(key="pg_engines").value == two_engines
    at.text_area(key="pg_prompt").set_value("Hello engines")
    at.button(key="pg_send").click().run()
    assert not at.exception and not at.error
    run_until_idle(at)
    assert not at.exception and not at.warning
    body = texts(at)
    assert "".join(WORDS[:6]).strip() in body
    assert "**alpha**" in body and "**beta**" in body
    assert "First token: **alpha**" in body
    assert "TTFT\xa0**" in body and "\xa0tokens/s" in body and "ITL\xa0mean\xa0" in body
    assert "completion\xa06" in body and "finish\xa0stop" in body
    assert not at.button(key="pg_send").disabled and at.button(key="pg_stop").disabled
    assert at.text_area(key="pg_prompt").value == ""
    code = [c.value for c in at.code]
    assert any(c.startswith("curl -N") for c in code) and any("OpenAI(base_url=" in c for c in code)
    # One "Copy as code" under the panes, a tab per engine: inside a narrow pane it was cut off.
    [copy] = [e for e in at.expander if e.label == "Copy as code"]
    assert [t.label for t in copy.tabs] == two_engines and len(copy.code) == 4
    [item] = playground.history()
    assert item.prompt == "Hello engines"


def test_inputs_are_disabled_while_streaming_and_stop_keeps_partials(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    for name in ("slow1", "slow2"):
        endpoints.add_engine(
            name, scripted_server.base_url, model=scripted_server.model(ttft=10, itl=20, tokens=500)
        )
    at = page().run()
    at.text_area(key="pg_prompt").set_value("long answer please")
    at.button(key="pg_send").click().run()
    # Until both columns hold words (a loaded machine's worker may take more than 0.5 s to start
    # streaming): the stop must keep partial answers, so there must be some.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if all(c.answer for c in playground.get_exchange(at.session_state["pg_run_id"]).columns):
            break
        time.sleep(0.1)
    at.run()
    assert at.button(key="pg_send").disabled and at.text_area(key="pg_prompt").disabled
    assert not at.button(key="pg_stop").disabled
    at.button(key="pg_stop").click().run()
    run_until_idle(at)
    assert not at.exception
    assert "stopped" in texts(at)
    view = playground.get_exchange(at.session_state["pg_run_id"])
    assert view.status == "cancelled" and all(c.answer for c in view.columns)


def test_errors_are_shown_in_words(db_url: str, scripted_server: ScriptedServer) -> None:
    endpoints.add_engine("fine", scripted_server.base_url, model=scripted_server.model(tokens=3, itl=1))
    endpoints.add_engine(
        "broken", scripted_server.base_url, model=scripted_server.model(fault="http", status=503)
    )
    at = page().run()
    at.button(key="pg_send").click().run()
    assert any("Type a prompt first." in e.value for e in at.error)
    at.text_area(key="pg_prompt").set_value("hi")
    at.toggle(key="pg_schema_on").set_value(True).run()
    at.text_area(key="pg_schema").set_value("{not json")
    at.button(key="pg_send").click().run()
    assert any("The schema is not valid JSON" in e.value for e in at.error)
    at.toggle(key="pg_schema_on").set_value(False).run()
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    assert not at.exception
    assert any("HTTP 503 Service Unavailable" in e.value for e in at.error)


def test_blind_mode_hides_names_until_a_confirmed_vote_which_can_be_undone(
    two_engines: list[str],
) -> None:
    at = page().run()
    at.toggle(key="pg_blind").set_value(True)
    at.text_area(key="pg_prompt").set_value("Which is better?")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    run_id = at.session_state["pg_run_id"]
    body = texts(at)
    assert "**Answer A**" in body and "**alpha**" not in body and "TTFT\xa0" not in body
    # A vote button only picks: nothing is stored nor shown until the pick is confirmed.
    at.button(key="pg_vote_A").click().run()
    assert not at.exception and playground.votes_for(run_id) == []
    assert "**alpha**" not in texts(at) and any("Answer A" in w.value for w in at.warning)
    at.button(key="pg_cancel_vote").click().run()
    assert playground.votes_for(run_id) == [] and at.button(key="pg_vote_B").label == "Answer B"
    at.button(key="pg_vote_A").click().run()
    at.button(key="pg_confirm_vote").click().run()
    assert not at.exception and not at.error
    assert "**alpha**" in texts(at)
    # Stored, but out of the tally by engine until the reveal (issue 45).
    [(engine_a, engine_b, winner)] = playground.votes_for(run_id)
    assert (engine_a, engine_b) == ("alpha", "beta") and winner in ("alpha", "beta")
    assert playground.tally() == []
    # Undone before the next vote: out of the tally, the names stay, and no new vote is offered.
    at.button(key="pg_undo_vote").click().run()
    assert not at.exception and not at.error
    assert playground.votes_for(run_id) == [] and "**alpha**" in texts(at)
    assert any("takes no vote" in i.value for i in at.info)
    assert not any(b.key and b.key.startswith(("pg_vote_", "pg_undo")) for b in at.button)


def test_a_blind_exchange_stays_blind_at_its_address_until_revealed(two_engines: list[str]) -> None:
    at = page().run()
    at.toggle(key="pg_blind").set_value(True)
    at.text_area(key="pg_prompt").set_value("Who wrote this?")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    run_id = at.session_state["pg_run_id"]
    # Another session (a reload, a shared link): its own toggle never was on.
    other = opened(run_id)
    assert not other.exception
    # Not even Recent exchanges says which engines took part (issue 56).
    body = texts(other)
    assert "**Answer A**" in body and "**Answer B**" in body and "TTFT\xa0" not in body
    assert not any(name in body for name in two_engines)
    assert "First token" not in body
    assert [o for o in other.selectbox(key="pg_diff_a_blind").options] == ["Answer A", "Answer B"]
    # The operator (a loopback client here) reveals them without a vote, for everyone.
    other.button(key="pg_reveal").click().run()
    assert not other.exception and "**alpha**" in texts(other) and "**alpha**" in texts(opened(run_id))
    assert playground.votes_for(run_id) == []
    assert not any(b.key and b.key.startswith("pg_vote_") for b in opened(run_id).button)


def test_each_browser_votes_once_and_the_presenter_sees_the_tally_then_reveals(
    two_engines: list[str],
) -> None:
    """Issue 34: a room votes. Each browser session is a participant: one's vote shows the
    names to that one only; the presenter (the loopback operator) sees the tally and reveals."""
    at = page().run()
    at.toggle(key="pg_blind").set_value(True)
    at.text_area(key="pg_prompt").set_value("Room vote?")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    run_id = at.session_state["pg_run_id"]
    voters = [opened(run_id), opened(run_id)]
    for voter, choice in zip(voters, "AB", strict=True):
        voter.button(key=f"pg_vote_{choice}").click().run()
        voter.button(key="pg_confirm_vote").click().run()
        assert not voter.exception and not voter.error and "**alpha**" in texts(voter)
    # The presenter has not voted: still blind, with the room's tally by blind labels.
    at.run()
    assert "**Answer A**" in texts(at) and "**alpha**" not in texts(at)
    assert any("Votes so far, 2 participants: Answer A: 1 · Answer B: 1" in c.value for c in at.caption)
    at.button(key="pg_vote_A").click().run()
    at.button(key="pg_confirm_vote").click().run()
    assert any("Votes so far, 3 participants" in c.value for c in at.caption)
    assert playground_votes.engines_hidden(run_id)  # the Runs page and exports wait for the reveal
    at.button(key="pg_reveal_all").click().run()
    assert not at.exception and not playground_votes.engines_hidden(run_id)
    assert "(Answer A): 2" in " ".join(c.value for c in at.caption)
    assert not any(b.key == "pg_reveal_all" for b in at.button)


def test_earlier_blind_turns_name_no_engine_until_their_vote(two_engines: list[str]) -> None:
    at = page().run()
    at.toggle(key="pg_blind").set_value(True)
    at.text_area(key="pg_prompt").set_value("first blind question")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    at.text_area(key="pg_prompt").set_value("second blind question")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    earlier = [c.value for c in at.caption if c.value.startswith(("Answer ", "alpha", "beta"))]
    assert sorted(v.split(":")[0] for v in earlier) == ["Answer A", "Answer B"]


def test_multi_turn_and_reopen_from_history(two_engines: list[str]) -> None:
    at = page().run()
    at.text_area(key="pg_prompt").set_value("first question")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    first_run = at.session_state["pg_run_id"]
    at.text_area(key="pg_prompt").set_value("second question")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    assert "**Turn 2:** second question" in texts(at)
    assert "Prefix cache, turn 2 vs turn 1" in texts(at)
    at.button(key="pg_new").click().run()
    assert at.session_state["pg_run_id"] is None
    at.button(key=f"pg_open_{first_run}").click().run()
    assert not at.exception
    assert at.session_state["pg_run_id"] == first_run and "**Turn 1:** first question" in texts(at)
    at.button(key=f"pg_again_{first_run}").click().run()
    run_until_idle(at)
    assert at.session_state["pg_run_id"] != first_run and "**Turn 1:** first question" in texts(at)


def store_exchange(
    columns: dict[str, dict[str, Any]], prompt: str = "Explain", status: str = "finished"
) -> int:
    """A finished exchange written straight to the database: answers and figures that no
    scripted stream produces (paragraphs, markup, NaN, nulls)."""
    from db.models import Exchange, Run
    from db.session import session_scope

    with session_scope() as session:
        run = Run(
            kind="playground",
            status=status,
            engine_names=",".join(columns),
            config={
                "conversation_id": "stored",
                "turn": 1,
                "prompt": prompt,
                "system": "",
                "params": {},
                "engines": [{"engine": name} for name in columns],
            },
            engines=[{"name": name, "base_url": "http://127.0.0.1:9/v1"} for name in columns],
        )
        session.add(run)
        session.flush()
        for name, values in columns.items():
            session.add(
                Exchange(
                    run_id=run.id,
                    conversation_id="stored",
                    engine_name=name,
                    messages=[{"role": "user", "content": prompt}],
                    **{"status": "finished", **values},
                )
            )
        return run.id


@pytest.fixture
def offline_engines(db_url: str) -> list[str]:
    """Two registered engines that nothing streams from (the page needs two to draw)."""
    for name in ("alpha", "beta"):
        endpoints.add_engine(name, "http://127.0.0.1:9/v1")
    return ["alpha", "beta"]


def opened(run_id: int) -> AppTest:
    """The page as a reload of /playground?exchange=<run_id> shows it (a new session)."""
    at = page()
    at.query_params["exchange"] = str(run_id)
    return at.run()


def reopened(run_id: int) -> AppTest:
    """A stored exchange opened from Recent exchanges."""
    at = page().run()
    return at.button(key=f"pg_open_{run_id}").click().run()


PARAGRAPHS = (
    "Streaming sends tokens as they come.\n\n[inference: the server] keeps a *queue*\n"
    "- item one\n```python\nprint('<b>hi</b>')\n```\n<img src=http://evil.test/a.png> & done"
)


def test_word_diff_renders_paragraphs_markup_and_brackets_as_text(offline_engines: list[str]) -> None:
    other = PARAGRAPHS.replace("the server", "each engine").replace("queue", "batch")
    at = reopened(store_exchange({"alpha": {"answer": PARAGRAPHS}, "beta": {"answer": other}}))
    assert not at.exception
    [diff] = [h.value for h in at.html if "pg-diff" in h.value]
    assert "<del" in diff and "<ins" in diff and "white-space: pre-wrap" in diff
    assert "[inference:" in diff and "\n\n" in diff and "&lt;img src=http://evil.test/a.png&gt;" in diff
    assert "<img" not in diff and "<b>" not in diff
    assert not any("-background[" in m.value for m in at.markdown)


def test_answers_that_differ_show_side_by_side_line_against_line(offline_engines: list[str]) -> None:
    at = reopened(
        store_exchange(
            {"alpha": {"answer": "Paris.\nIt is big."}, "beta": {"answer": "Paris\nIt is old."}}
        )
    )
    [diff] = [h.value for h in at.html if "pg-diff" in h.value]
    assert "Paris<del" in diff  # the full stop alone differs, not "Paris." against "Paris"
    at.radio(key="pg_diff_view").set_value("Side by side").run()
    assert not at.exception
    [lines] = [h.value for h in at.html if "pg-diff" in h.value]
    assert lines.startswith('<div class="pg-diff-lines">') and lines.count("<tr>") == 2
    changed = r"<td [^>]*>It is <del [^>]*>big</del>\.</td><td [^>]*>It is <ins [^>]*>old</ins>\.</td>"
    assert re.search(changed, lines)
    assert any("left: alpha · right: beta" in c.value for c in at.caption)


def test_answers_and_error_bodies_load_no_remote_image(offline_engines: list[str]) -> None:
    at = reopened(
        store_exchange(
            {
                "alpha": {"answer": "See ![chart](http://evil.test/track.png) and `![code](x)`."},
                "beta": {
                    "status": "failed",
                    "answer": "",
                    "error": "HTTP 502: ![x](http://evil.test/e.png) <img src=y>",
                },
            }
        )
    )
    assert not at.exception
    rendered = (
        [m.value for m in at.markdown] + [e.value for e in at.error] + [c.value for c in at.caption]
    )
    assert not any("](http://evil.test" in value and "![" in value for value in rendered)
    assert "image not loaded: chart" in texts(at)
    assert any("!\\[x\\]" in e.value and "\\<img" in e.value for e in at.error)


def test_no_none_or_nan_and_one_unit_per_quantity(offline_engines: list[str]) -> None:
    at = reopened(
        store_exchange(
            {
                "alpha": {
                    "model": None,
                    "answer": "a",
                    "finish_reason": None,
                    "usage": {"prompt_tokens": None, "completion_tokens": "7"},
                    "metrics": {"ttft_s": 1.5, "itl_mean_s": math.nan, "tokens_per_s": None},
                },
                "beta": {
                    "model": "m`x`*y*",
                    "answer": "b",
                    "metrics": {
                        "ttft_s": 0.85,
                        "itl_mean_s": 0.004,
                        "itl_p90_s": 0.006,
                        "tokens_per_s": math.inf,
                    },
                },
            },
            prompt=None,
        )
    )  # type: ignore[arg-type]
    assert not at.exception
    body = texts(at)
    assert "None" not in body and "nan" not in body.lower() and "inf" not in body
    assert "**1.50\xa0s**" in body and "**0.850\xa0s**" in body and "850\xa0ms" not in body
    assert "mean\xa04.0\xa0ms · p90\xa06.0\xa0ms" in body
    assert "**beta** · `` m`x`*y* ``" in body


def test_names_in_labels_and_titles_are_escaped(db_url: str) -> None:
    for name in ("a_b_c", "star-1"):
        endpoints.add_engine(name, "http://127.0.0.1:9/v1", model="we`ird*model")
    at = page().run()
    assert not at.exception
    labels = [t.label for t in at.text_input]
    assert "Model for a\\_b\\_c" in labels


def test_reload_shows_the_exchange_again_even_while_it_streams(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    for name in ("slow1", "slow2"):
        endpoints.add_engine(
            name, scripted_server.base_url, model=scripted_server.model(ttft=10, itl=20, tokens=400)
        )
    at = page().run()
    at.text_area(key="pg_prompt").set_value("stream for a while")
    at.button(key="pg_send").click().run()
    run_id = at.session_state["pg_run_id"]
    assert at.query_params.get("exchange") == str(run_id)
    time.sleep(0.5)
    reloaded = opened(run_id)
    assert not reloaded.exception and reloaded.session_state["pg_run_id"] == run_id
    assert "**Turn 1:** stream for a while" in texts(reloaded) and "streaming" in texts(reloaded)
    assert not reloaded.button(key="pg_stop").disabled and reloaded.button(key="pg_send").disabled
    reloaded.button(key="pg_stop").click().run()
    run_until_idle(reloaded)
    assert "stopped" in texts(opened(run_id))
    reloaded.button(key="pg_new").click().run()
    assert "exchange" not in reloaded.query_params


def test_a_bad_address_is_refused_in_words(offline_engines: list[str]) -> None:
    for value, words in (("abc", "not an exchange number"), ("999", "exchange 999 not found")):
        at = opened(value)  # type: ignore[arg-type]
        assert not at.exception
        assert any(words in e.value for e in at.error)
        assert at.session_state["pg_run_id"] is None and "exchange" not in at.query_params


def test_parameters_keep_one_label_and_show_their_values_beside(offline_engines: list[str]) -> None:
    at = page().run()
    assert [e.label for e in at.expander if e.label.startswith("Parameters")] == ["Parameters"]
    assert any("temperature 0.7" in c.value for c in at.caption)
    at.number_input(key="pg_temperature").set_value(0.3).run()
    at.number_input(key="pg_seed").set_value(7).run()
    assert [e.label for e in at.expander if e.label.startswith("Parameters")] == ["Parameters"]
    assert any("temperature 0.3" in c.value and "seed 7" in c.value for c in at.caption)


def test_blind_vote_among_three_engines_confirms_and_reveals_at_once(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    for salt, name in enumerate(("alpha", "beta", "gamma")):
        endpoints.add_engine(
            name, scripted_server.base_url, model=scripted_server.model(tokens=4, itl=1, salt=salt)
        )
    at = page().run()
    at.toggle(key="pg_blind").set_value(True)
    at.text_area(key="pg_prompt").set_value("Best of three?")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    run_id = at.session_state["pg_run_id"]
    assert [at.button(key=f"pg_vote_{x}").label for x in "ABC"] == ["Answer A", "Answer B", "Answer C"]
    assert not any(e.label.startswith("Blind votes") for e in at.expander)
    winner = playground.blind_order(run_id, ["alpha", "beta", "gamma"])[2]
    at.button(key="pg_vote_C").click().run()
    at.button(key="pg_confirm_vote").click().run()
    assert not at.exception and not at.error
    [confirmation] = at.success
    assert "Answer C" in confirmation.value and f"**{winner}**" in confirmation.value
    body = texts(at)
    assert "**Answer" not in body and all(f"**{name}**" in body for name in ("alpha", "beta", "gamma"))
    assert "Answer C in the blind vote" in body
    assert not any(b.key and b.key.startswith("pg_vote_") for b in at.button)
    # After the reveal the diff's selectors name the engines (a new widget: the old kept "Answer A").
    assert at.selectbox(key="pg_diff_a_named").options == playground.blind_order(
        run_id, ["alpha", "beta", "gamma"]
    )
    # The tally by engine waits for the reveal (issue 45): this voter sees the names, the room not.
    assert not at.dataframe
    playground.reveal(run_id, Viewer(role="operator", identity="local"))
    at.run()
    [tally] = at.dataframe
    rows = tally.value.to_dict("records")
    # The best of three decides two pairs: the winner against each of the others.
    assert len(rows) == 2 and all(winner in (r["engine A"], r["engine B"]) for r in rows)
    assert all(r["A wins" if r["engine A"] == winner else "B wins"] == 1 for r in rows)


def test_a_reasoning_models_thinking_shows_collapsed_above_its_answer(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    """4 thinking tokens then 5 answer tokens: the thinking in a collapsed expander titled with
    its tokens, the answer without it, time to first answer beside TTFT; the other column (a
    model that does not think) has neither."""
    endpoints.add_engine(
        "thinker",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=20, itl=2, think=4, tokens=5),
    )
    endpoints.add_engine(
        "plain",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=20, itl=2, tokens=5),
    )
    at = page().run()
    at.text_area(key="pg_prompt").set_value("Think first")
    at.button(key="pg_send").click().run()
    run_until_idle(at)
    assert not at.exception and not at.error
    [thinking] = [e for e in at.expander if e.label.startswith("Thinking")]
    assert "4 tokens by the engine" in thinking.label and "answer 5 tokens" in thinking.label
    assert not thinking.proto.expanded
    assert "".join(WORDS[:4]).strip() in " ".join(m.value for m in thinking.markdown)
    body = texts(at)
    assert "".join(WORDS[4:9]).strip() in body
    assert body.count("first\xa0answer\xa0**") == 1  # only the column whose TTFT is thinking
