"""`python cli.py ask`: the Playground headless, against registered (scripted) engines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from services.engines.endpoints import add_engine
from tests.support.scripted_server import ScriptedServer

REPO_ROOT = Path(__file__).resolve().parents[2]


def ask(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "cli.py", "ask", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )


def test_one_prompt_to_two_engines_measured_stored_and_continued(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    add_engine(
        "quick",
        scripted_server.base_url,
        kind="vllm",
        # 5 ms apart, not 1: eight tokens 1 ms apart can arrive in one read on a busy host,
        # leaving no decode time to make a tokens/s of (seen once in a whole run).
        model=scripted_server.model(ttft=5, itl=5, tokens=8),
    )
    add_engine(
        "broken",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=5, itl=1, tokens=8, fault="cut", at=4),
    )
    result = ask("Name three colours.", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    quick, broken = payload["engines"]["quick"], payload["engines"]["broken"]
    assert quick["status"] == "finished" and quick["completion_tokens"] == 8 and quick["answer"]
    assert quick["ttft_s"] > 0 and quick["tokens_per_s"] > 0
    assert broken["status"] == "failed" and broken["error_class"] == "stream_cut"
    assert payload["first_token_engine"] in ("quick", "broken") and payload["turn"] == 1
    from services.playground import history

    assert history()[0].run_id == payload["run_id"]  # stored like the page's exchanges
    again = ask(
        "And three more?",
        "--engine",
        "quick",
        "--engine",
        "broken",
        "--conversation",
        payload["conversation_id"],
    )
    assert again.returncode == 0, again.stderr
    assert (
        "turn 2" in again.stdout.splitlines()[0]
        and "== quick" in again.stdout
        and "TTFT" in again.stdout
    )


def test_bad_input_is_one_line_and_exit_1(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    add_engine("one", scripted_server.base_url, kind="vllm", model=scripted_server.model(tokens=4))
    add_engine("two", scripted_server.base_url, kind="vllm", model=scripted_server.model(tokens=4))
    schema = tmp_path / "schema.json"
    schema.write_text("{not json")
    for args, message in (
        (["hi", "--engine", "one"], "Choose 2 to 6 engines (got 1)."),
        (["hi", "--engine", "one", "--engine", "nope"], "nope"),
        (["  ", "--engine", "one", "--engine", "two"], "Type a prompt first."),
        (
            ["hi", "--engine", "one", "--engine", "two", "--schema", str(schema)],
            "The schema is not valid JSON",
        ),
        (
            ["hi", "--engine", "one", "--engine", "two", "--schema", str(tmp_path / "missing.json")],
            "Cannot read",
        ),
    ):
        result = ask(*args)
        assert result.returncode == 1, (args, result.stdout)
        assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


def test_each_answer_says_where_its_engines_time_went(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    add_engine(
        "timed",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=5, itl=1, tokens=8, report="vllm", etimes="1:4:7"),
    )
    add_engine("silent", scripted_server.base_url, kind="sglang", model=scripted_server.model(tokens=4))
    result = ask("Hi", "--json")
    assert result.returncode == 0, result.stderr
    engines = json.loads(result.stdout)["engines"]
    timed = engines["timed"]
    assert timed["engine_times"]["decode_s"] == 0.007 and timed["time_split"]["queue_s"] == 0.001
    assert timed["time_split"]["e2e_rest_s"] == timed["e2e_s"] - (0.001 + (0.004 + 0.007))
    assert engines["silent"]["engine_times"] is None and engines["silent"]["time_split"] is None
    text = ask("Hi").stdout
    assert "engine's own times: queue 1.0 ms · prefill 4.0 ms · decode 7.0 ms" in text
    assert "engine's own times: not reported by SGLang" in text


def test_a_schema_pointing_outside_itself_is_one_line_and_exit_1_and_never_fetched(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """Issue 44, item 1, from the command line: http, https, file:// and a remote $id base."""
    import socket

    add_engine("one", scripted_server.base_url, kind="vllm", model=scripted_server.model(tokens=4))
    add_engine("two", scripted_server.base_url, kind="vllm", model=scripted_server.model(tokens=4))
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "integer"}')
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        for name, schema in {
            "http": {"$ref": f"http://{address}/internal-admin/delete"},
            "https": {"$ref": f"https://{address}/s.json"},
            "file": {"$ref": secret.as_uri()},
            "id": {"$id": f"http://{address}/base/", "properties": {"a": {"$ref": "a.json"}}},
        }.items():
            path = tmp_path / f"{name}.json"
            path.write_text(json.dumps(schema))
            result = ask("hi", "--engine", "one", "--engine", "two", "--schema", str(path))
            assert result.returncode == 1, (name, result.stdout)
            assert result.stderr.count("\n") == 1 and "points outside it" in result.stderr, result.stderr
        try:
            listener.accept()
            raise AssertionError("the schema's URL was fetched")
        except TimeoutError:
            pass
