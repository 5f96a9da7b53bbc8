"""The gate as a CI user meets it, against the scripted server: a dead candidate (every request
an HTTP 500), three times the inter-token latency, a repeat of the baseline's setup, a 49% warm
prefix cache, a fingerprint field unknown on one side, and imported names with control
characters. Each asserts the exit code and the words (docs/ci-gate.md)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.commands.test_gate import run_cli
from tests.support.scripted_server import ScriptedServer

#: The README's checks.
README_CHECKS = "ttft_p90:+10%,output_tok_s:-5%"
#: The baseline's scenario: long enough per token that a loaded machine's lateness of a few ms
#: stays far inside the limits (a repeat must not fail the README's checks).
BASE = {"ttft": 40, "itl": 4, "tokens": 16}


def bench_args(server: ScriptedServer, *extra: str, **scenario: object) -> list[str]:
    return [
        "bench", "--url", server.base_url, "--model", server.model(**{**BASE, **scenario}),
        "--concurrency", "4", "--requests", "24", "--input-len", "16", "--output-len", "16",
        "--timeout", "30", "--quiet", *extra,
    ]  # fmt: skip


def engine(server: ScriptedServer) -> str:
    """The engine's name in a `bench --url` run: the server's address."""
    return f"127.0.0.1:{server.port}"


def baseline(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer, tmp_path: Path, **scenario: object
) -> int:
    out = tmp_path / f"base-{len(list(tmp_path.iterdir()))}.json"
    code, _, err = run_cli(capsys, *bench_args(server, "--json", str(out), **scenario))
    assert code == 0, err
    return int(json.loads(out.read_text())["run_id"])


def test_a_dead_candidate_fails_whatever_the_flags(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = baseline(capsys, scripted_server, tmp_path)
    xml, md = tmp_path / "gate.xml", tmp_path / "gate.md"
    code, out, err = run_cli(
        capsys,
        *bench_args(scripted_server, "--baseline", str(base), "--fail-on", README_CHECKS,
                    "--allow-incomparable", "--allow-unknown-noise", "--junit", str(xml),
                    "--summary-md", str(md), fault="http"),
    )  # fmt: skip
    assert code == 1, err
    assert "nothing completed (0 of 24 requests; 24 failed)" in err
    name = engine(scripted_server)
    assert f"[fail] {name} error_rate (default check): 0.0% -> 100.0% (+100.0pp, limit +1pp)" in out
    assert f"[not measured] {name} ttft_p90" in out
    assert "within their limits" not in out + err
    assert md.read_text().startswith("## Shootout gate: ❌ regression")
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None
    failures = {case.get("name"): case.find("failure") for case in suite.iter("testcase")}
    completed = failures["requests completed"]
    assert completed is not None and completed.get("type") == "nothing completed"
    ttft = failures["ttft_p90:+10%"]
    assert ttft is not None and ttft.get("type") == "not measured"
    assert int(suite.get("failures") or 0) >= 3


def test_three_times_the_inter_token_latency_fails(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = baseline(capsys, scripted_server, tmp_path)
    code, out, err = run_cli(
        capsys,
        *bench_args(scripted_server, "--baseline", str(base), "--fail-on", README_CHECKS,
                    itl=3 * BASE["itl"]),
    )  # fmt: skip
    assert code == 1, out + err
    line = next(x for x in out.splitlines() if "output_tok_s" in x)
    assert line.startswith(f"[fail] {engine(scripted_server)} output_tok_s:")
    assert "regression beyond the limit and beyond noise" in line
    assert err.strip().startswith("gate: regression: ") and err.strip().endswith("(exit 1)")


def test_a_repeat_of_the_baseline_uses_the_stored_repeats(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = baseline(capsys, scripted_server, tmp_path)
    for _ in range(2):
        baseline(capsys, scripted_server, tmp_path)
    md = tmp_path / "gate.md"
    # Limits wide enough for a busy test machine (a starved client once read TTFT p90 twice its
    # repeats'): what is under test is which noise judges, not the machine's calm.
    code, out, err = run_cli(
        capsys,
        *bench_args(scripted_server, "--baseline", str(base), "--fail-on",
                    "ttft_p50:+200%,output_tok_s:-50%", "--summary-md", str(md)),
    )  # fmt: skip
    assert code == 0, out + err
    assert out.strip().endswith("gate: pass: 3 passed (exit 0)")
    row = next(x for x in md.read_text().splitlines() if x.startswith("| ") and "output_tok_s" in x)
    # Three stored runs of the setup (the candidate's own left out) judge its noise.
    assert "3 other stored runs of this setup range" in row


def test_a_49_percent_warm_cache_is_not_cold(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = baseline(capsys, scripted_server, tmp_path, prompt=100, cached=0)
    code, out, err = run_cli(
        capsys,
        *bench_args(scripted_server, "--baseline", str(base), "--fail-on", README_CHECKS,
                    prompt=100, cached=49),
    )  # fmt: skip
    assert code == 3, out + err
    name = engine(scripted_server)
    assert f"Cached prompt share: #{base} {name} 0%, #{base + 1} {name} 49%" in out
    assert err.startswith("gate: not comparable: the runs differ in cached prompt share")


def test_a_field_unknown_on_one_side_blocks_and_says_so(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from services.runs import reports

    base = baseline(capsys, scripted_server, tmp_path)
    exported = json.loads(reports.export_run(base, "json").data)
    # A results file that did not record the answers' length as served.
    summary = exported["run"]["summary"]
    for block in summary["comparability"].values():
        block.pop("output_len_served", None)
    for block in summary["engines"].values():
        block.pop("output_tokens", None)
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(exported))
    code, out, err = run_cli(
        capsys, *bench_args(scripted_server, "--baseline", str(path), "--fail-on", README_CHECKS)
    )
    assert code == 3, out + err
    assert "Output length as served:" in out
    assert "not recorded" in out and "unknown on one side, so a difference cannot be ruled out" in out


def test_imported_names_with_control_characters(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = Path(__file__).parents[1] / "services" / "importers" / "samples"
    data = json.loads((samples / "vllm_bench_serve_detailed.json").read_text())
    data["label"] = "vllm\x1b[31m\x07red\x00\x0b"
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data))
    xml, md = tmp_path / "gate.xml", tmp_path / "gate.md"
    code, out, err = run_cli(
        capsys,
        *bench_args(scripted_server, "--baseline", str(path), "--fail-on", README_CHECKS,
                    "--junit", str(xml), "--summary-md", str(md)),
    )  # fmt: skip
    assert code in (1, 3, 4), out + err
    assert "vllm[31mred" in out + err  # the name, its controls dropped
    for text in (out, err, md.read_text()):
        assert not any(ord(c) < 32 and c != "\n" for c in text)
    ET.parse(xml)  # well-formed: the XML-illegal characters were replaced
    assert "vllm\x1b" not in xml.read_text() and "\ufffd" in xml.read_text()
