"""`python cli.py demo`: headless run with --json, the scenario list, clear errors."""

from __future__ import annotations

import json

import cli


def test_demo_json(db_url: str, demo_server, capsys) -> None:  # type: ignore[no-untyped-def]
    demo_server.register("cli-cached", "ttft=300,itl=5", cache=0.5)
    code = cli.main(
        [
            "demo",
            "prefix-cache",
            "--engines",
            "cli-cached",
            "--set",
            "prompt_tokens=150",
            "--set",
            "turns=2",
            "--set",
            "max_tokens=4",
            "--json",
        ]
    )
    output = json.loads(capsys.readouterr().out)
    assert code == 0
    assert output["status"] == "finished" and output["scenario"] == "prefix-cache"
    assert output["verdicts"]["cli-cached"]["verdict"] == "cache"
    assert output["conclusion"].startswith("Prefix caching cut the time to first token")
    assert [s["key"] for s in output["steps"]] == ["repeat", "chat"]
    assert cli.main(["demo", "--show", str(output["run_id"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == output["run_id"]


def test_demo_list_and_errors(db_url: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert cli.main(["demo", "--list", "--json"]) == 0
    names = [s["name"] for s in json.loads(capsys.readouterr().out)]
    assert names == [
        "prefix-cache",
        "batching",
        "decode-bound",
        "structured-output",
        "kv-pressure",
        "parallel-sampling",
        "same-model",
        "how-many-slots",
    ]
    assert cli.main(["demo", "nope"]) == 1
    assert "error: No demo scenario 'nope'" in capsys.readouterr().err
    assert cli.main(["demo", "batching", "--engines", "x", "--set", "levels"]) == 1
    assert "--set takes KEY=VALUE" in capsys.readouterr().err
