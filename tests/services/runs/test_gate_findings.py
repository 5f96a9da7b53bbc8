"""The gate's findings on stored runs (services/runs/gate/findings.py, issue 55): a client-bound
run or engines run together is not measured (exit 4) unless allowed, with the evidence in every
output; a jump or identical answers fail unless allowed; a broken workload fails whatever the
flags and says which side broke it; what changed is in the terminal and the JUnit; a stall in
the stored figures fails; a stalled request stays in every draw of the rate's interval."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.bench.selfcheck import WorkerCheck, report
from services.runs import gate
from services.runs.gate import noise
from tests.commands.test_gate import run_cli
from tests.services.runs.test_comparability import bench_config, block
from tests.services.runs.test_gate import steady
from tests.services.runs.test_runs import make_run

CHECKS = gate.parse_fail_on("ttft_p90:+10%,output_tok_s:-5%")


def stored(ttft: float = 0.100, summary: dict[str, Any] | None = None, **fields: Any) -> int:
    """A run of one vllm engine whose requests' TTFT is about `ttft`; `fields` change its block."""
    numbers = block(**{"ttft_s": {"mean": ttft, "p50": ttft, "p90": ttft * 1.5}, **fields})
    return make_run(
        engines={"vllm": numbers},
        config=bench_config(),
        requests={"vllm": steady(ttft)},
        summary=summary,
    )


def client_bound() -> dict[str, Any]:
    """A generator block as the benchmark stores it: a loop late for half the run (starved of its
    core), whatever the figures beside it."""
    starved = WorkerCheck(loop_lag_s=[0.030] * 100, wall_s=2.0, cpu_s=0.1)
    generator = report([starved], open_loop=False)
    assert generator["client_bound"]
    return generator


def finding(check: str, severity: str, message: str) -> dict[str, Any]:
    return {"check": check, "severity": severity, "engine": "vllm", "message": message}


def test_a_client_bound_candidate_is_not_measured_unless_allowed(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 55: on a loaded host, 9 healthy candidates of 10 failed as "regression beyond the
    limit and beyond noise", each run's self-check said client-bound, and no output said so."""
    base = stored(0.100)
    slower = stored(0.200, generator=client_bound())
    result = gate.evaluate(base, [slower], CHECKS)
    assert result.exit_code == gate.EXIT_NOT_MEASURED
    assert result.message.startswith(
        f"not measured: the figures cannot be trusted (#{slower} vllm client-bound: the evidence is "
    )
    assert "pass --allow-untrusted" in result.message
    (found,) = result.findings
    assert found.kind == "untrusted" and found.side == "candidate" and found.failed
    assert "event loop late for" in found.text  # the evidence, in every output below
    assert "event loop late for" in gate.markdown(result)
    suite = ET.fromstring(gate.junit(result)).find("testsuite")
    assert suite is not None
    case = next(c for c in suite.iter("testcase") if c.get("name") == "untrusted")
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "untrusted"
    assert "event loop late for" in (failure.get("message") or "")

    code, out, err = run_cli(
        capsys, "runs", "compare", "--baseline", str(base), str(slower), "--fail-on",
        "ttft_p90:+10%,output_tok_s:-5%",
    )  # fmt: skip
    assert code == 4
    assert f"[fail] vllm untrusted: the candidate's figures cannot be trusted: #{slower} vllm " in out
    assert err.startswith("gate: not measured: the figures cannot be trusted")

    allowed = gate.evaluate(base, [slower], CHECKS, allowed=gate.Allowed(untrusted=True))
    assert allowed.exit_code == gate.EXIT_REGRESSION
    assert allowed.findings[0].status == "allowed"
    assert "untrusted (allowed)" in allowed.message


def test_engines_that_ran_together_are_not_measured(db_url: str) -> None:
    base = stored(0.100)
    together = make_run(
        engines={"vllm": block(), "sglang": block()},
        config=bench_config(),
        requests={"vllm": steady(0.1), "sglang": steady(0.1)},
        summary={"engines_run": "together"},
    )
    result = gate.evaluate(base, [together], CHECKS)
    assert result.exit_code == gate.EXIT_NOT_MEASURED
    (found,) = result.findings
    assert found.kind == "untrusted" and "2 engines on one host at once" in found.text
    assert f"#{together}'s engines ran together" in result.message


def test_a_jump_no_hardware_explains_fails_unless_allowed(db_url: str) -> None:
    """Issue 55: identical answers at 1 ms TTFT read 24x the baseline's throughput and passed."""
    base = stored(0.100)
    jumped = stored(0.100, output_throughput_tok_s=2000.0)
    result = gate.evaluate(base, [jumped], CHECKS)
    assert result.exit_code == gate.EXIT_REGRESSION
    (found,) = result.findings
    assert found.kind == "jump" and found.failed
    assert "output tok/s 500.0 tok/s -> 2,000 tok/s, 4.0x the baseline's" in found.text
    assert "(--allow-jump passes it)" in found.text
    assert result.message == "regression: 3 passed; findings: jump (failed) (exit 1)"
    allowed = gate.evaluate(base, [jumped], CHECKS, allowed=gate.Allowed(jump=True))
    assert allowed.exit_code == gate.EXIT_PASS and allowed.findings[0].status == "allowed"
    # Twice as fast is an upgrade, not a jump.
    assert not gate.evaluate(base, [stored(0.100, output_throughput_tok_s=1000.0)], CHECKS).findings


def test_identical_answers_fail_unless_the_baseline_gave_them_too(db_url: str) -> None:
    same = finding("identical_answers", "warn", "vllm gave the same answer to 40 of 40 prompts")
    base = stored(0.100)
    cached = stored(0.100, findings=[same])
    result = gate.evaluate(base, [cached], CHECKS)
    assert result.exit_code == gate.EXIT_REGRESSION
    (found,) = result.findings
    assert found.kind == "identical answers" and "40 of 40" in found.text
    assert gate.evaluate(base, [cached], CHECKS, allowed=gate.Allowed(jump=True)).exit_code == 0
    # A workload whose prompts all get one answer on both sides: said, not failed.
    also = gate.evaluate(stored(0.100, findings=[same]), [cached], CHECKS)
    assert also.exit_code == gate.EXIT_PASS and also.findings[0].status == "note"


def test_a_broken_workload_fails_whatever_the_flags_and_says_which_side(db_url: str) -> None:
    """Issue 55: with --allow-incomparable, an engine ignoring max_tokens and one whose usage is
    3x its text exited 0; without it, the words blamed the setup."""
    lying = finding(
        "usage_vs_stream", "fail", "vllm: the usage's completion_tokens disagree with the stream"
    )
    base = stored(0.100)
    broken = stored(0.100, findings=[lying])
    result = gate.evaluate(
        base, [broken], CHECKS, allow_incomparable=True, allowed=gate.Allowed(True, True, True)
    )
    assert result.exit_code == gate.EXIT_REGRESSION
    assert result.message.startswith(
        f"regression: the candidate #{broken} vllm broke the workload: vllm: the usage's "
        "completion_tokens disagree with the stream"
    )
    # A baseline that broke it: nothing is comparable with it, whatever the flags.
    against = gate.evaluate(broken, [stored(0.100)], CHECKS, allow_incomparable=True)
    assert against.exit_code == gate.EXIT_NOT_COMPARABLE
    assert against.message.startswith(f"not comparable: the baseline #{broken} vllm broke the workload")
    assert "Choose another baseline" in against.message


def test_max_tokens_ignored_in_a_run_stored_before_findings(db_url: str) -> None:
    base = stored(0.100)
    longer = stored(0.100, output_tokens=100 * 160)  # 160 tokens per request, 128 asked
    result = gate.evaluate(base, [longer], CHECKS, allow_incomparable=True)
    assert result.exit_code == gate.EXIT_REGRESSION
    assert "160.0 output tokens per request against 128 asked: the engine ignored max_tokens" in (
        result.message
    )
    plain = gate.evaluate(base, [longer], CHECKS)
    assert plain.exit_code == gate.EXIT_REGRESSION  # the candidate's doing: never "fix the setup"


def test_what_changed_is_in_the_terminal_and_the_junit(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 55: another model passed with the change said only in the Markdown."""
    base = make_run(engines={"vllm": block()}, config=bench_config(), model="smollm2")
    other = make_run(
        engines={"vllm": block()}, config=bench_config(), model="qwen3", versions={"vllm": "0.12.0"}
    )
    xml = tmp_path / "gate.xml"
    code, out, _ = run_cli(
        capsys, "runs", "compare", "--baseline", str(base), str(other), "--fail-on", "ttft_p90:+10%",
        "--junit", str(xml),
    )  # fmt: skip
    assert code == 0
    assert f"  changed (what is compared): Model: #{base} vllm smollm2, #{other} vllm qwen3" in out
    assert "  changed (what is compared): Engine version: " in out
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    model = properties[f"changed Model (#{other} vllm against #{base} vllm)"]
    assert model == f"Model: #{base} vllm smollm2, #{other} vllm qwen3"


def test_a_stall_in_the_stored_figures_fails_unless_allowed(db_url: str) -> None:
    base = stored(0.100)
    e2e = {"mean": 1.1, "p50": 1.0, "p90": 1.2, "p99": 1.3, "max": 31.0}
    stalled = stored(0.100, e2e_s=e2e)
    result = gate.evaluate(base, [stalled], CHECKS)
    assert result.exit_code == gate.EXIT_REGRESSION
    (found,) = result.findings
    assert found.kind == "stall" and "a request took 31.00 s (the run's own E2E p90 1.20 s" in found.text
    allowed = gate.evaluate(base, [stalled], CHECKS, allowed=gate.Allowed(stall=True))
    assert allowed.exit_code == gate.EXIT_PASS
    # Judged beyond the generator's own longest delay, a stall is the engine's on a busy host too.
    busy = stored(0.100, e2e_s=e2e, generator=client_bound())
    assert gate.evaluate(base, [busy], CHECKS).exit_code == gate.EXIT_REGRESSION
    # A longest request three times its p90 is a run's ordinary tail.
    healthy = {**e2e, "max": 3.6}
    assert not gate.evaluate(base, [stored(0.100, e2e_s=healthy)], CHECKS).findings


def test_a_stalled_request_is_in_every_draw_of_the_rate() -> None:
    """The bootstrap of the rate left one stalled request in 50 out of a third of its draws, so
    its interval reached back to the healthy rate: the stall now keeps its place."""
    e2e = np.full(50, 0.2)
    e2e[23] = 30.0
    tail = noise.tail_requests(e2e)
    assert tail.tolist() == [i == 23 for i in range(50)]
    index = noise._draw_index(tail, np.random.default_rng(1))
    assert (index[:, 23] == 23).all() and (index[:, :23] != 23).all() and (index[:, 24:] != 23).all()
    # A healthy run's spread has no tail: every request is resampled.
    assert not noise.tail_requests(np.random.default_rng(2).lognormal(-1.6, 0.3, 200)).any()
