"""Probe-then-register, the one use case behind the Engines page, `engines add` and `bench --url`."""

from __future__ import annotations

from services.engines import endpoints, registration


def test_a_server_that_answers_is_stored_with_what_it_said(db_url: str, scripted_server) -> None:  # type: ignore[no-untyped-def]
    done = registration.probe_and_register("one", scripted_server.base_url)
    assert done.probe is not None and done.probe.ok
    assert done.record is not None and done.record.kind == done.probe.kind
    assert done.record.model == (done.probe.models[0] if done.probe.models else None)
    twin = registration.probe_and_register("two", scripted_server.base_url, kind="vllm", model="mine")
    assert twin.record is not None and (twin.record.kind, twin.record.model) == (
        "vllm",
        "mine",
    )  # the caller wins
    assert twin.twins == ["one"]


def test_a_server_that_does_not_answer_is_stored_only_when_asked(db_url: str) -> None:
    down = "http://127.0.0.1:9"  # discard: nothing listens
    refused = registration.probe_and_register("down", down)
    assert refused.record is None and refused.probe is not None and not refused.probe.ok
    assert endpoints.list_engines() == []
    kept = registration.probe_and_register("down", down, store_unreachable=True)
    assert kept.record is not None and kept.record.kind == "openai"


def test_identify_asks_the_server_only_for_what_the_caller_left_open(scripted_server) -> None:  # type: ignore[no-untyped-def]
    chosen = registration.identify(scripted_server.base_url, kind="sglang", model="m")
    assert chosen.probe is None and (chosen.kind, chosen.model) == ("sglang", "m")
    asked = registration.identify(scripted_server.base_url)
    assert asked.probe is not None and asked.kind == asked.probe.kind
    assert registration.identify("http://127.0.0.1:9").kind == "openai"  # nothing answered: generic


def test_a_second_name_for_one_url_is_not_stored_unless_allowed(db_url: str, scripted_server) -> None:  # type: ignore[no-untyped-def]
    registration.probe_and_register("one", scripted_server.base_url)
    refused = registration.probe_and_register("two", scripted_server.base_url, allow_twin=False)
    assert refused.record is None and refused.probe is None and refused.twins == ["one"]
    assert [e.name for e in endpoints.list_engines()] == ["one"]
