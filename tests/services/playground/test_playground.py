"""Playground service: sends to several engines at once, persists partial answers, multi-turn,
schema validation, votes, copy as code; against the scripted server and the real engines."""

from __future__ import annotations

import json
import time
from datetime import UTC

import pytest

from db.models import Run
from db.session import session_scope
from services import playground
from services.core.errors import NotFoundError, ValidationError
from services.engines import SamplingParams, endpoints
from services.playground import EngineChoice, SendRequest
from services.playground import view as pg_view
from tests.support.scripted_server import WORDS, ScriptedServer


def get_run_config(run_id: int) -> dict[str, object]:
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return dict(run.config)


def register(server: ScriptedServer, name: str, kind: str = "openai", **scenario: object) -> str:
    endpoints.add_engine(name, server.base_url, kind=kind, model=server.model(**scenario))
    return name


def send_and_wait(request: SendRequest, timeout_s: float = 30) -> playground.ExchangeView:
    handle = playground.send(request)
    assert playground.wait(handle.run_id, timeout_s)
    return playground.get_exchange(handle.run_id)


def test_two_engines_stream_side_by_side_with_their_own_measurements(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    fast = register(scripted_server, "fast", ttft=20, itl=2, tokens=8, cached=0)
    slow = register(scripted_server, "slow", ttft=150, itl=10, tokens=8, salt=3)
    view = send_and_wait(
        SendRequest(
            engines=(EngineChoice(fast), EngineChoice(slow)),
            prompt="Hello there",
            system="Be brief.",
            params=SamplingParams(temperature=0.0, max_tokens=32),
        )
    )
    assert view.status == "finished" and not view.active
    by_name = {c.engine: c for c in view.columns}
    assert by_name["fast"].answer == "".join(WORDS[:8])
    assert by_name["slow"].answer == "".join(WORDS[(i + 3) % len(WORDS)] for i in range(8))
    for column in view.columns:
        assert column.status == "finished" and column.finish_reason == "stop"
        assert (
            column.completion_tokens == 8
            and column.prompt_tokens is not None
            and column.cached_tokens == 0
        )
        assert (
            column.ttft_s is not None and column.itl_mean_s is not None and column.itl_p90_s is not None
        )
        assert column.tokens_per_s is not None and column.tokens_per_s > 0
    assert by_name["slow"].ttft_s > by_name["fast"].ttft_s  # type: ignore[operator]
    assert view.first_token_engine == "fast" and view.fastest_engine == "fast"
    [item] = playground.history()
    assert (
        item.run_id == view.run_id and item.engines == ["fast", "slow"] and item.prompt == "Hello there"
    )


def test_partial_answers_are_persisted_while_streaming_and_stop_keeps_them(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    a = register(scripted_server, "a", ttft=10, itl=20, tokens=400)
    b = register(scripted_server, "b", ttft=10, itl=20, tokens=400)
    handle = playground.send(SendRequest(engines=(EngineChoice(a), EngineChoice(b)), prompt="long"))
    deadline = time.monotonic() + 10
    view = playground.get_exchange(handle.run_id)
    while time.monotonic() < deadline and not all(c.answer for c in view.columns):
        time.sleep(0.1)
        view = playground.get_exchange(handle.run_id)
    assert view.active and view.status == "running"
    assert all(c.answer and c.status == "streaming" and c.ttft_s is not None for c in view.columns)
    playground.stop(handle.run_id)
    assert playground.wait(handle.run_id, 10)
    stopped = playground.get_exchange(handle.run_id)
    assert stopped.status == "cancelled"
    for column in stopped.columns:
        assert column.status == "cancelled" and column.error_class == "cancelled"
        assert len(column.answer) >= len(
            next(c.answer for c in view.columns if c.engine == column.engine)
        )


def test_faults_show_in_their_column_in_plain_words(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    ok = register(scripted_server, "ok", tokens=4, itl=1)
    dies = register(scripted_server, "dies", tokens=10, itl=1, fault="cut", at=5)
    http = register(scripted_server, "http500", fault="http", status=500)
    bad = register(scripted_server, "badjson", tokens=6, itl=1, fault="invalid_json", at=2)
    slow = register(scripted_server, "slowfirst", ttft=800, tokens=2, itl=1)
    view = send_and_wait(
        SendRequest(engines=tuple(EngineChoice(n) for n in (ok, dies, http, bad, slow)), prompt="x")
    )
    by_name = {c.engine: c for c in view.columns}
    assert view.status == "finished_with_errors"
    assert by_name["ok"].status == "finished" and by_name["slowfirst"].status == "finished"
    assert by_name["slowfirst"].ttft_s is not None and by_name["slowfirst"].ttft_s >= 0.8
    assert by_name["dies"].status == "failed" and by_name["dies"].error_class == "stream_cut"
    assert by_name["dies"].answer == "".join(WORDS[:5])
    assert by_name["http500"].error == "HTTP 500 Internal Server Error: scripted failure 500"
    assert by_name["badjson"].error_class == "invalid_json"


def test_multi_turn_each_engine_continues_with_its_own_answers(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    a = register(scripted_server, "a", tokens=3, itl=1, cached=0)
    b = register(scripted_server, "b", tokens=3, itl=1, salt=5, cached=0)
    engines = (EngineChoice(a), EngineChoice(b))
    first = send_and_wait(SendRequest(engines=engines, prompt="turn one", system="sys"))
    endpoints.update_engine("a", model=scripted_server.model(tokens=3, itl=1, cached=40))
    second = send_and_wait(
        SendRequest(
            engines=engines, prompt="turn two", system="sys", conversation_id=first.conversation_id
        )
    )
    assert second.turn == 2 and second.conversation_id == first.conversation_id
    from db.models import Exchange
    from db.session import session_scope

    with session_scope() as session:
        rows = {
            r.engine_name: r.messages for r in session.query(Exchange).filter_by(run_id=second.run_id)
        }
    first_answers = {c.engine: c.answer for c in first.columns}
    for engine, messages in rows.items():
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
        assert messages[2]["content"] == first_answers[engine]
    column_a = next(c for c in second.columns if c.engine == "a")
    assert column_a.cached_tokens == 40 and column_a.first_turn_cached_tokens == 0
    assert column_a.first_turn_ttft_s is not None
    turns = playground.conversation(first.conversation_id)
    assert [t.prompt for t in turns] == ["turn one", "turn two"]


def test_json_schema_mode_validates_every_answer(db_url: str, scripted_server: ScriptedServer) -> None:
    good = register(scripted_server, "follows", kind="vllm", itl=1)
    bad = register(scripted_server, "ignores", itl=1, tokens=4, fault="ignore_schema")
    schema = playground.parse_schema(
        '{"type": "object", "properties": {"city": {"type": "string"}, "people": {"type": "integer"}},'
        ' "required": ["city", "people"]}'
    )
    view = send_and_wait(
        SendRequest(engines=(EngineChoice(good), EngineChoice(bad)), prompt="json", schema=schema)
    )
    by_name = {c.engine: c for c in view.columns}
    assert by_name["follows"].schema_check is not None and by_name["follows"].schema_check.valid
    check = by_name["ignores"].schema_check
    assert check is not None and not check.valid and "not JSON" in check.message


def test_an_answer_is_checked_once_when_it_ends_and_never_per_read(
    db_url: str, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44, item 2: a page's render and a follower's poll read the stored verdict."""
    from services.core import json_schema

    one = register(scripted_server, "one", kind="vllm", itl=1)
    two = register(scripted_server, "two", kind="vllm", itl=1)
    schema = playground.parse_schema('{"type": "object", "required": ["city"]}')
    send_and_wait(
        SendRequest(engines=(EngineChoice(one), EngineChoice(two)), prompt="json", schema=schema)
    )
    run_id = playground.history()[0].run_id

    def never(*_args: object) -> None:
        raise AssertionError("an answer was checked again on a read")

    monkeypatch.setattr(json_schema, "check_text", never)
    monkeypatch.setattr(json_schema, "check", never)
    for _ in range(3):
        view = playground.get_exchange(run_id)
        assert all(c.schema_check is not None and c.schema_check.valid is False for c in view.columns)


def test_a_check_over_its_budget_keeps_the_answers_and_says_so(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    """Issue 56: forty $defs levels, each an allOf of two references to the next, took 2^40 steps
    per answer: the exchange stayed "running" and no answer was stored."""
    from services.core import json_schema

    defs = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(40)}
    schema = playground.parse_schema(
        json.dumps({"$defs": {**defs, "d40": {"type": "string"}}, "$ref": "#/$defs/d0"})
    )
    one = register(scripted_server, "one", kind="vllm", itl=1)
    two = register(scripted_server, "two", kind="vllm", itl=1)
    started = time.monotonic()
    view = send_and_wait(
        SendRequest(engines=(EngineChoice(one), EngineChoice(two)), prompt="json", schema=schema), 60
    )
    # Both answers are checked at once, each once, within the check's budget (and the engines').
    assert time.monotonic() - started < 2 * json_schema.BUDGET.seconds + 10
    assert view.status == "finished"
    for column in view.columns:
        assert column.status == "finished" and column.answer == "{}"
        check = column.schema_check
        assert check is not None and check.valid is None and "within its budget" in check.message


def test_schema_checks_report_the_failing_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"price": {"type": "number"}}},
            }
        },
    }
    check = playground.check_answer('{"items": [{"price": "cheap"}]}', schema)
    assert (
        not check.valid and check.path == "$.items[0].price" and "not of type 'number'" in check.message
    )
    assert playground.check_answer('```json\n{"items": []}\n```', schema).valid
    with pytest.raises(ValidationError, match="not valid JSON"):
        playground.parse_schema("{oops")
    with pytest.raises(ValidationError, match="Not a valid JSON schema"):
        playground.parse_schema('{"type": 12}')


def test_parallel_sampling_where_supported_and_a_note_where_not(
    db_url: str, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.engines import get_adapter

    register(scripted_server, "multi", kind="vllm", tokens=3, itl=1)
    register(scripted_server, "single", kind="openai", tokens=3, itl=1)
    monkeypatch.setattr(type(get_adapter("openai")), "supports_n", False)
    view = send_and_wait(
        SendRequest(
            engines=(EngineChoice("multi"), EngineChoice("single")),
            prompt="x",
            params=SamplingParams(n=2, top_k=5),
        )
    )
    by_name = {c.engine: c for c in view.columns}
    assert len(by_name["multi"].choices) == 2 and len(set(by_name["multi"].choices)) == 2
    assert by_name["single"].choices == []
    assert any("n > 1" in note for note in by_name["single"].notes)
    assert any("top_k" in note for note in by_name["single"].notes)


def test_bad_requests_are_refused_in_words(db_url: str, scripted_server: ScriptedServer) -> None:
    register(scripted_server, "one")
    register(scripted_server, "two")
    with pytest.raises(ValidationError, match="2 to 6"):
        playground.send(SendRequest(engines=(EngineChoice("one"),), prompt="x"))
    with pytest.raises(ValidationError, match="prompt"):
        playground.send(SendRequest(engines=(EngineChoice("one"), EngineChoice("two")), prompt="  "))
    with pytest.raises(ValidationError, match="Temperature"):
        playground.send(
            SendRequest(
                engines=(EngineChoice("one"), EngineChoice("two")),
                prompt="x",
                params=SamplingParams(temperature=5),
            )
        )
    with pytest.raises(NotFoundError):
        playground.send(SendRequest(engines=(EngineChoice("one"), EngineChoice("nope")), prompt="x"))


def test_votes_tally_per_pair_and_blind_order_is_stable(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    register(scripted_server, "x1", tokens=2, itl=1)
    register(scripted_server, "x2", tokens=2, itl=1)
    view = send_and_wait(SendRequest(engines=(EngineChoice("x1"), EngineChoice("x2")), prompt="v"))
    playground.vote(view.run_id, "x1", "x2", "x1")
    playground.vote(view.run_id, "x2", "x1", "x1")
    playground.vote(view.run_id, "x1", "x2", "tie")
    [pair] = playground.tally()
    assert (pair.engine_a, pair.engine_b, pair.wins_a, pair.wins_b, pair.ties) == ("x1", "x2", 2, 0, 1)
    with pytest.raises(ValidationError):
        playground.vote(view.run_id, "x1", "x2", "someone")
    order = playground.blind_order(view.run_id, ["x1", "x2", "x3"])
    assert order == playground.blind_order(view.run_id, ["x1", "x2", "x3"]) and sorted(order) == [
        "x1",
        "x2",
        "x3",
    ]


def test_word_diff() -> None:
    segments = playground.word_diff("the red fox jumps", "the blue fox jumps high")
    assert ("delete", "red") in segments and ("insert", "blue") in segments
    assert "".join(t for op, t in segments if op != "insert") == "the red fox jumps"
    assert "".join(t for op, t in segments if op != "delete") == "the blue fox jumps high"


def test_reopen_resend_and_copy_as_code(
    db_url: str, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoints.add_engine(
        "keyed",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(tokens=2, itl=1),
        api_key_env="SCRIPTED_KEY",
    )
    register(scripted_server, "plain", tokens=2, itl=1)
    monkeypatch.setenv("SCRIPTED_KEY", "secret-value")
    request = SendRequest(
        engines=(EngineChoice("keyed"), EngineChoice("plain")),
        prompt="again",
        params=SamplingParams(temperature=0.5, max_tokens=20, top_k=3),
    )
    view = send_and_wait(request)
    assert view.status == "finished"
    reopened = playground.reopen(view.run_id)
    assert reopened.prompt == "again" and reopened.params == request.params
    again = playground.resend(view.run_id)
    assert playground.wait(again.run_id, 30) and again.run_id != view.run_id
    assert playground.get_exchange(again.run_id).status == "finished"
    curl, python = playground.request_code(view.run_id, "keyed")
    assert "$SCRIPTED_KEY" in curl and '"top_k": 3' in curl and "secret-value" not in curl + python
    assert "extra_body={'top_k': 3}" in python and "temperature=0.5" in python
    compile(python, "<copied>", "exec")


def test_an_exchange_left_streaming_by_a_dead_app_is_marked_interrupted(db_url: str) -> None:
    from datetime import datetime, timedelta

    from db.models import Exchange, Run
    from db.session import session_scope

    with session_scope() as session:
        old = datetime.now(UTC) - timedelta(minutes=5)
        run = Run(
            kind="playground",
            status="running",
            config={"conversation_id": "c", "turn": 1, "prompt": "p"},
            heartbeat_at=old,
        )
        session.add(run)
        session.flush()
        session.add(
            Exchange(
                run_id=run.id, conversation_id="c", engine_name="e", answer="partial", status="streaming"
            )
        )
        run_id = run.id
    view = playground.get_exchange(run_id)
    assert view.status == "interrupted" and view.columns[0].status == "interrupted"
    assert view.columns[0].answer == "partial"


def test_stored_nulls_and_odd_usage_never_read_none(db_url: str) -> None:
    from db.models import Exchange, Run
    from db.session import session_scope

    with session_scope() as session:
        run = Run(
            kind="playground",
            status="finished",
            config={"conversation_id": "n", "turn": 1, "prompt": None},
        )
        session.add(run)
        session.flush()
        session.add(
            Exchange(
                run_id=run.id,
                conversation_id="n",
                engine_name="e",
                status="finished",
                messages=[{"role": "user", "content": None}],
                usage={"prompt_tokens": "12", "completion_tokens": 3.0, "total_tokens": None},
            )
        )
        run_id = run.id
    view = playground.get_exchange(run_id)
    assert view.prompt == "" and view.system == ""
    assert view.columns[0].prompt_tokens is None and view.columns[0].completion_tokens == 3
    assert playground.conversation("n")[0].prompt == "" and playground.history()[0].prompt == ""


def test_an_exchange_address_is_a_run_id_or_refused_in_words() -> None:
    assert playground.exchange_id("12") == 12 and playground.exchange_id(" #7 ") == 7
    for bad in ("abc", "", "1.5", "²", "-3", "9" * 20):
        with pytest.raises(ValidationError, match="not an exchange number"):
            playground.exchange_id(bad)


@pytest.mark.engines
def test_three_local_engines_answer_side_by_side(local_engines: list) -> None:
    names = tuple(EngineChoice(e.name) for e in local_engines)
    view = send_and_wait(
        SendRequest(
            engines=names,
            prompt="Name one planet.",
            params=SamplingParams(temperature=0.0, max_tokens=16, seed=1),
        ),
        timeout_s=300,
    )
    assert len(view.columns) == len(local_engines)
    for column in view.columns:
        assert column.status == "finished", f"{column.engine}: {column.error}"
        assert column.answer and column.ttft_s is not None and column.completion_tokens
        assert column.prompt_tokens and column.finish_reason in ("stop", "length")
    # Turn two on the same conversation: llama.cpp's prompt cache reports cached tokens.
    second = send_and_wait(
        SendRequest(
            engines=names,
            prompt="And another one?",
            conversation_id=view.conversation_id,
            params=SamplingParams(temperature=0.0, max_tokens=16, seed=1),
        ),
        timeout_s=300,
    )
    llama = next(c for c in second.columns if c.kind == "llamacpp")
    assert (
        llama.cached_tokens is not None
        and llama.cached_tokens > 0
        and llama.first_turn_ttft_s is not None
    )


def test_blind_mode_is_stored_with_the_exchange_and_kept_by_a_resend(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    register(scripted_server, "b1", tokens=2, itl=1)
    register(scripted_server, "b2", tokens=2, itl=1)
    choices = (EngineChoice("b1"), EngineChoice("b2"))
    blind = send_and_wait(SendRequest(engines=choices, prompt="who?", blind=True))
    named = send_and_wait(SendRequest(engines=choices, prompt="who?"))
    assert blind.blind and not blind.revealed and not named.blind
    # Issue 45: the order is drawn when it is sent, stored with it, and the screen shows that one.
    stored = get_run_config(blind.run_id)["blind_order"]
    assert sorted(stored) == ["b1", "b2"] and "blind_order" not in get_run_config(named.run_id)
    assert [c.engine for c in pg_view.arrange(blind).columns] == stored
    assert playground.reopen(blind.run_id).blind and not playground.reopen(named.run_id).blind
    again = playground.resend(blind.run_id)
    assert playground.wait(again.run_id, 30) and playground.get_exchange(again.run_id).blind
