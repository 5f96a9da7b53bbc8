"""Structured output: an engine that enforces the schema against one that ignores it."""

from __future__ import annotations

from services.demos import runner
from services.demos.structured_output import engine_verdict, schema_valid


def test_enforced_and_ignored_schema(db_url: str, demo_server) -> None:
    demo_server.register("guided", "ttft=40,itl=5,tokens=30")
    demo_server.register("unguided", "ttft=40,itl=5,tokens=30,fault=ignore_schema")
    run_id = runner.start_demo(
        "structured-output", ["guided", "unguided"], options={"requests": 3}, background=False
    )
    result = runner.demo_result(run_id)
    assert result["status"] == "finished", result
    guided, unguided = result["verdicts"]["guided"], result["verdicts"]["unguided"]
    assert (
        guided["verdict"] == "enforced"
        and guided["valid_constrained"] == 1.0
        and guided["valid_free"] == 0.0
    )
    assert unguided["verdict"] == "not_enforced" and unguided["valid_constrained"] == 0.0
    assert "guided: 3/3 schema-valid with the constraint against 0/3 without" in result["conclusion"]
    assert result["conclusion"].startswith("The schema was enforced by guided")


def test_schema_validation() -> None:
    assert schema_valid('{"city": "Paris", "country": "France", "population": 2100000}') == (True, "")
    assert schema_valid('```json\n{"city": "Paris", "country": "France", "population": 1}\n```')[0]
    assert schema_valid("Paris is a city")[1] == "not JSON"
    ok, why = schema_valid('{"city": "Paris", "country": "France"}')
    assert not ok and "population" in why


def test_rejected_schema_is_said() -> None:
    v = engine_verdict(
        {"valid_rate": 0.0, "answered": 3}, {"answered": 0, "error": "http_status: HTTP 400"}
    )
    assert v.verdict == "rejected"
