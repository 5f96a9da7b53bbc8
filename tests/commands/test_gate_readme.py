"""The README's CI job, as written (only the URL replaced, and --allow-untrusted added: the
suite shares its two cores with other work, so its load generator is often client-bound, which
this test does not judge), against a dead and a slower scripted server: both fail the gate. The scripted server's scenario is the model it serves (the command
names no model, so the benchmark asks the server for it)."""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.commands.test_gate import run_cli
from tests.support.scripted_server import Identity, ScriptedServer, scenario_model

ROOT = Path(__file__).parents[2]
STAGING_URL = "http://staging:8000"


def job_command(path: Path) -> list[str]:
    """The `shootout bench` command of the first yaml block's folded `run: >` step."""
    block = re.search(r"```yaml\n(.*?)```", path.read_text(), re.DOTALL)
    assert block is not None, f"no yaml block in {path}"
    lines = block.group(1).splitlines()
    start = next(i for i, line in enumerate(lines) if "shootout bench" in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    folded = []
    for line in lines[start:]:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        folded.append(line.strip())
    return shlex.split(" ".join(folded))


def test_the_readme_and_the_ci_doc_show_one_job() -> None:
    assert job_command(ROOT / "README.md") == job_command(ROOT / "docs" / "ci-gate.md")


def _without_gate_flags(argv: list[str]) -> list[str]:
    out, skip = [], False
    for item in argv:
        if skip:
            skip = False
        elif item in ("--baseline", "--fail-on", "--junit"):
            skip = True
        else:
            out.append(item)
    return out


def served(**scenario: object) -> ScriptedServer:
    return ScriptedServer(identity=Identity(served_model=scenario_model(**scenario)))


@pytest.mark.parametrize(
    ("scenario", "words"),
    [
        ({"fault": "http"}, "nothing completed"),
        ({"itl": 3}, "output_tok_s"),
    ],
    ids=["dead", "slower"],
)
def test_the_readme_job_fails_a_dead_and_a_slower_candidate(
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    scenario: dict[str, object],
    words: str,
) -> None:
    argv = job_command(ROOT / "README.md")
    assert argv[:2] == ["shootout", "bench"] and STAGING_URL in argv
    monkeypatch.chdir(tmp_path)
    healthy = {"ttft": 20, "itl": 1, "tokens": 128, "vary": 1}
    with served(**healthy) as server:
        baseline_args = [a.replace(STAGING_URL, server.root_url) for a in _without_gate_flags(argv)]
        code, _, err = run_cli(capsys, *baseline_args[1:], "--json", "base.json", "--quiet")
        assert code == 0, err
    from services.runs import reports

    run_id = json.loads(Path("base.json").read_text())["run_id"]
    Path("perf").mkdir()
    Path("perf/baseline.json").write_bytes(reports.export_run(run_id, "json").data)

    with served(**{**healthy, **scenario}) as server:
        job = [a.replace(STAGING_URL, server.root_url) for a in argv] + ["--allow-untrusted"]
        code, out, err = run_cli(capsys, *job[1:])
    assert code == 1, out + err
    assert err.strip().splitlines()[-1].startswith("gate: regression:") and words in out + err
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert suite is not None and int(suite.get("failures") or 0) >= 1
