"""`cli.py runs compare --baseline N M --fail-on ...` and `cli.py bench ... --baseline RUN|FILE
--fail-on ...`: exit 0 pass, 1 regression, 2 bad --fail-on, 3 not comparable, 5 tool error;
the Markdown summary (also into $GITHUB_STEP_SUMMARY) and the JUnit XML are written."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.services.bench.test_cli import bench
from tests.services.runs.test_gate import steady, stored
from tests.support.scripted_server import ScriptedServer


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from cli import main

    try:
        code = main(list(argv))
    except SystemExit as error:  # argparse's own exit (bad arguments)
        code = int(error.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_runs_compare_gate_exit_codes_and_files(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = stored(0.100, steady(0.100))
    same = stored(0.102, steady(0.102))
    slower = stored(0.200, steady(0.200))
    short = stored(0.100, steady(0.100), honoured_output_len=False, output_tokens=6_000)
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    checks = "ttft_p90:+10%,output_tok_s:-5%"

    code, out, _ = run_cli(
        capsys, "runs", "compare", "--baseline", str(base), str(same), "--fail-on", checks
    )
    assert code == 0 and "gate: pass: 3 passed (exit 0)" in out

    md, xml = tmp_path / "gate.md", tmp_path / "gate.xml"
    code, out, err = run_cli(
        capsys, "runs", "compare", "--baseline", str(base), str(slower), "--fail-on", checks,
        "--summary-md", str(md), "--junit", str(xml),
    )  # fmt: skip
    assert code == 1
    assert "[fail] vllm ttft_p90: 150 ms -> 300 ms (+100.0%, limit +10%)" in out
    assert err.strip() == "gate: regression: 1 failed, 2 passed (exit 1)"
    assert md.read_text().startswith("## Shootout gate: ❌ regression")
    assert step_summary.read_text().startswith("earlier step\n## Shootout gate: ✅ pass")
    assert step_summary.read_text().count("## Shootout gate") == 2  # appended, never replaced
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"

    code, out, err = run_cli(
        capsys, "runs", "compare", "--baseline", str(base), str(short), "--fail-on", checks
    )
    assert code == 3
    assert "not comparable (output length as served, fixed output length honoured)" in out
    assert "[not judged] vllm ttft_p90:" in out and "[fail]" not in out
    # The candidate's answers changed, not the setup: the line says which side.
    assert err.startswith(
        f"gate: not comparable: the candidate #{short} vllm changed output length as served, "
        "fixed output length honoured; no check was judged"
    )
    assert "fix that engine, or pass --allow-incomparable" in err

    code, out, _ = run_cli(
        capsys, "runs", "compare", "--baseline", str(base), str(short), "--fail-on", checks,
        "--allow-incomparable", "--json",
    )  # fmt: skip
    payload = json.loads(out)
    assert code == 0 and payload["override"] is True and payload["comparable"] is False
    assert payload["comparability"][0]["differences"][0].startswith("Output length as served")


def test_bad_fail_on_is_exit_2_with_one_clear_message(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(
        capsys, "runs", "compare", "--baseline", "1", "2", "--fail-on", "ttft_p90:10%"
    )
    assert code == 2
    assert "argument --fail-on: 'ttft_p90:10%' is not METRIC:+N% or METRIC:-N%" in err
    code, _, err = run_cli(capsys, "runs", "compare", "1", "2", "--junit", "x.xml")
    assert code == 2 and err.strip() == (
        "error: --summary-md, --junit, --allow-unknown-noise and --fail-on-unknown-noise go "
        "with --fail-on."
    )
    code, _, err = run_cli(capsys, "runs", "compare", "1", "2", "--allow-jump")
    assert code == 2 and "--allow-jump and --allow-untrusted go with --fail-on" in err
    code, _, err = run_cli(
        capsys, "runs", "compare", "--baseline", "1", "2", "--fail-on", "ttft_p90:+10%",
        "--allow-unknown-noise", "--fail-on-unknown-noise",
    )  # fmt: skip
    assert code == 2 and "contradict each other" in err
    # A missing run is a tool error: exit 5.
    code, _, err = run_cli(
        capsys, "runs", "compare", "--baseline", "1", "2", "--fail-on", "ttft_p90:+10%"
    )
    assert code == 5 and "do not exist" in err


def test_plain_compare_shows_comparability(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = stored(0.100, steady(0.100), cached_tokens=0)
    warm = stored(0.100, steady(0.100), cached_tokens=13_000)
    code, out, _ = run_cli(capsys, "runs", "compare", str(base), str(warm))
    assert code == 0
    assert "Not comparable: no winner is named." in out and "Prefix cache:" in out
    assert "is fastest" not in out and "is highest" not in out


def bench_args(server: ScriptedServer, ttft: int, *extra: str) -> list[str]:
    return [
        "--url", server.base_url, "--model", server.model(ttft=ttft, itl=1, tokens=16, vary=1),
        "--concurrency", "4", "--requests", "24", "--input-len", "16", "--output-len", "8",
        "--timeout", "30", "--quiet", *extra,
    ]  # fmt: skip


#: The baseline's TTFT: long enough that a loaded machine's few ms of lateness (a 5 ms TTFT
#: once read 409% over its baseline in CI) stay far inside the "same" run's +400%.
BASE_TTFT_MS = 40


def test_bench_gate_against_a_run_and_a_file(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    first = bench(*bench_args(scripted_server, BASE_TTFT_MS, "--json", str(tmp_path / "base.json")))
    assert first.returncode == 0, first.stderr
    base = json.loads((tmp_path / "base.json").read_text())["run_id"]

    # The scripted server's scenario is its model name: another name, as another engine build
    # would serve, is what is compared (listed), not a reason to refuse.
    # --allow-untrusted: the suite's shared cores often leave the generator client-bound.
    slower = bench(
        *bench_args(
            scripted_server, 10 * BASE_TTFT_MS, "--baseline", str(base), "--fail-on",
            "ttft_p50:+50%", "--allow-untrusted",
        )
    )  # fmt: skip
    assert slower.returncode == 1, slower.stderr
    # "; findings: untrusted (allowed)" too when the shared machine starved the generator.
    assert "gate: regression: 1 failed, 1 passed" in slower.stderr and "(exit 1)" in slower.stderr
    assert "[fail] " in slower.stdout and "ttft_p50" in slower.stdout

    # The baseline as a file (a Shootout export, as a CI job keeps one), imported as a run.
    from services.runs import reports

    exported = tmp_path / "baseline.json"
    exported.write_bytes(reports.export_run(base, "json").data)
    md = tmp_path / "gate.md"
    same = bench(
        *bench_args(scripted_server, BASE_TTFT_MS, "--baseline", str(exported), "--fail-on", "ttft_p50:+400%"),
        "--summary-md", str(md), "--allow-untrusted",
    )  # fmt: skip
    assert same.returncode == 0, same.stderr
    assert "gate: pass" in same.stdout and md.read_text().startswith("## Shootout gate: ✅ pass")

    free = bench(
        *bench_args(
            scripted_server,
            BASE_TTFT_MS,
            "--free-output",
            "--baseline",
            str(base),
            "--fail-on",
            "ttft_p50:+50%",
        )
    )
    assert free.returncode == 3, free.stderr
    assert "fixed output length asked" in free.stderr

    missing = bench(
        *bench_args(scripted_server, 5, "--baseline", "nope.json", "--fail-on", "ttft_p50:+5%")
    )
    assert missing.returncode == 5  # a tool error: its own exit code
    assert (
        missing.stderr.strip()
        == "error: --baseline 'nope.json' is neither a run number nor a readable file."
    )
    bad = bench(*bench_args(scripted_server, 5, "--baseline", str(base), "--fail-on", "ttft:+5%"))
    assert bad.returncode == 2 and "unknown metric 'ttft'" in bad.stderr


def test_a_bench_json_document_is_a_baseline(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """commands/gate.py's docstring says a `bench --json` document works as `--baseline`: it
    was refused ("does not read as results"). It is imported as a run of its summary (no
    request rows: a change past its limit has no within-run noise, said as such)."""
    document = tmp_path / "bench.json"
    first = bench(*bench_args(scripted_server, BASE_TTFT_MS, "--json", str(document)))
    assert first.returncode == 0, first.stderr
    same = bench(
        *bench_args(scripted_server, BASE_TTFT_MS, "--baseline", str(document), "--fail-on",
                    "ttft_p50:+400%", "--allow-untrusted"),
    )  # fmt: skip
    assert same.returncode == 0, same.stdout + same.stderr
    assert ": comparable" in same.stdout and "gate: pass" in same.stdout
