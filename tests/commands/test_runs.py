"""`cli.py export` writes the file from the stream; `cli.py import` of a file over the import
limit is one line and a non-zero exit."""

from __future__ import annotations

import csv
import io
import json

from tests.commands.test_cli import cli
from tests.support.big_runs import make_big_run


def test_export_writes_the_stream_and_imports_back(db_url: str, tmp_path) -> None:
    run_id = make_big_run(3000)
    target = tmp_path / "run.json"
    written = cli("export", str(run_id), "--format", "json", "-o", str(target), "--json")
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout)["bytes"] == target.stat().st_size
    assert len(json.loads(target.read_bytes())["requests"]) == 3000
    assert not list(tmp_path.glob("*.partial"))
    stdout = cli("export", str(run_id), "--format", "csv", "-o", "-")
    assert stdout.returncode == 0 and len(list(csv.reader(io.StringIO(stdout.stdout)))) == 3001
    imported = cli("import", str(target), "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["requests"] == 3000


def test_an_import_over_the_limit_is_one_line_and_fails(db_url: str, tmp_path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2_100_000 + b"{}")
    result = cli("import", str(big), env={"SHOOTOUT_LIMIT_IMPORT_MB": "2"})
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: big.json is 2.1 MB; this server imports files of at most 2 MB "
        "(SHOOTOUT_LIMIT_IMPORT_MB)."
    )


def test_an_export_that_fails_leaves_no_file(db_url: str, tmp_path) -> None:
    result = cli("export", "404", "--format", "json", "-o", str(tmp_path / "x.json"))
    assert result.returncode == 1 and result.stderr.strip() == "error: Run #404 does not exist."
    assert not list(tmp_path.glob("x.json*"))


def test_runs_show_and_compare_say_where_the_time_went(db_url: str, capsys) -> None:
    """Issue 32: the split the Runs page shows, in the same words on the command line."""
    from tests.commands.test_gate import run_cli
    from tests.services.runs.test_comparison_split import split_run, timed

    a = split_run("timed", "vllm-cpu", "vllm", timed())
    b = split_run("silent", "sglang-cpu", "sglang", {"requests": 4, "reported": 0})
    code, out, _ = run_cli(capsys, "runs", "show", str(a))
    assert code == 0 and "where the time went" in out
    assert f"#{a} vllm-cpu: mean E2E 300.0 ms = queue 1.0 + prefill 20.0" in out
    code, out, _ = run_cli(capsys, "runs", "compare", str(a), str(b))
    assert code == 0
    assert f"#{b} sglang-cpu: where the time went: not reported by SGLang" in out
    assert "Queue (engine) p50" in out and "not reported by SGLang" in out


def test_export_steps_writes_each_steps_cost_and_energy(db_url: str, tmp_path) -> None:
    from tests.services.runs.reports.test_steps import MEASURED, block
    from tests.services.runs.test_runs import make_run

    run_id = make_run(engines={"vllm": block(price=3.6, energy=MEASURED)})
    result = cli("export", str(run_id), "--format", "steps", "-o", "-")
    assert result.returncode == 0, result.stderr
    (row,) = csv.DictReader(io.StringIO(result.stdout))
    assert row["engine"] == "vllm" and row["cost"] == "priced" and row["energy"] == "measured"
    played = make_run(kind="playground", engines={})
    refused = cli("export", str(played), "--format", "steps", "-o", str(tmp_path / "x.csv"))
    assert refused.returncode == 1 and "only benchmark, import and tune runs" in refused.stderr


def test_runs_show_of_a_hidden_exchange_prints_no_answers_timing_until_the_reveal(db_url: str) -> None:
    """Issue 56: "Names and timings appear once you vote" holds on the command line too:
    `runs show` and its JSON say no answer's TTFT, E2E or token count before the reveal."""
    from services.playground import votes
    from tests.services.runstate.test_blind_surfaces import OPERATOR, PER_ANSWER, hidden_exchange

    run_id = hidden_exchange()
    text = cli("runs", "show", str(run_id))
    as_json = cli("runs", "show", str(run_id), "--json")
    assert text.returncode == 0 and as_json.returncode == 0, text.stderr + as_json.stderr
    answers = json.loads(as_json.stdout)["answers"]
    assert [sorted(a) for a in answers] == [["Answer", "Error", "Status", "Text", "Turn"]] * 2
    for shown in (text.stdout, as_json.stdout):
        assert "TTFT" not in shown and "E2E" not in shown and "output tokens" not in shown
        assert not [figure for figure in PER_ANSWER if figure in shown], shown
    votes.reveal(run_id, OPERATOR)
    revealed = cli("runs", "show", str(run_id))
    assert "TTFT 136 ms" in revealed.stdout and "797 output tokens" in revealed.stdout
