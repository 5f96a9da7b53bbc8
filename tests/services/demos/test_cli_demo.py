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


def test_demo_text(db_url: str, demo_server, capsys) -> None:  # type: ignore[no-untyped-def]
    demo_server.register("cli-text", "ttft=300,itl=5", cache=0.5)
    settings = ["--set", "prompt_tokens=150", "--set", "turns=2", "--set", "max_tokens=4"]
    assert cli.main(["demo", "prefix-cache", "--engines", "cli-text", *settings, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert cli.main(["demo", "--show", str(shown["run_id"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Demo #{shown['run_id']}: Prefix caching [finished] on cli-text"
    assert lines[2] == "1. The same long prompt, twice (finished)"
    number = shown["steps"][0]["numbers"][0]
    assert lines[3] == f"   {number['label']}: {number['text']}"
    assert lines[-1] == f"Conclusion: {shown['conclusion']}"
    assert cli.main(["demo", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[:2] == [
        f"{'prefix-cache':<20} Prefix caching (about 1 minute on the local CPU engines)",
        f"{'':<20} default engines: vllm-cpu, sglang-cpu, llamacpp-4slot, llamacpp-1slot",
    ]
    assert listed[2] == f"{'':<20} --set prompt_tokens=600  Shared prompt length (tokens, about)"
    assert f"{'':<20} --set levels=[1, 2, 4, 8, 16]  Concurrency levels" in listed
