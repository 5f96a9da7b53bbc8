"""`cli.py tune`: a real sweep written as JSON, and bad input refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli


def test_tune_writes_its_json_with_the_best_and_a_failed_configuration(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tune.json"
    code = cli.main(
        [
            "tune",
            "--kind",
            "llamacpp",
            "--config",
            "np=1",
            "--config=--no-such-flag=1",
            "--requests",
            "3",
            "--input-len",
            "16",
            "--output-len",
            "8",
            "--slo",
            "ttft=5000",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    payload = json.loads(out.read_text())
    good, bad = payload["configs"]
    assert good["status"] == "finished" and good["metrics"]["completed"] == 3
    assert bad["status"] == "failed_to_start" and "invalid argument" in bad["log_tail"]
    assert payload["best"]["label"] == "np=1" and payload["best"]["launch"]["plain"].endswith(
        "--metrics --slots"
    )
    assert payload["status"] == "finished_with_errors" and payload["slo"] == "TTFT <= 5000 ms"
    assert "best: np=1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--set", "np=two"], "Setting np: expected a whole number"),
        (["--set", "nope=1"], "llamacpp has no setting 'nope'"),
        (["--kind", "trtllm", "--set", "max_batch_size=8"], "does not run on this machine"),
        (["--set", "np=1", "--slo", "ttft=fast"], "--slo: 'fast' is not a number"),
        (["--set", "np"], "Expected SETTING=VALUE"),
        (["--set", "np=1", "--usd-per-hour", "$3.50"], "not a plain number"),
        (["--set", "np=1", "--usd-per-hour", "0"], "above 0"),
        (["--set", "np=1", "--usd-per-hour", "12000"], "really per hour"),
    ],
)
def test_bad_input_exits_1_with_one_line(
    db_url: str, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["tune", *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
