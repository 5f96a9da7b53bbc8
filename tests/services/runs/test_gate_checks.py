"""The gate's checks beyond latency: failed requests in percentage points, optional checks,
stored repeats of the baseline's setup, and why two alike runs are not repeats."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from services import runs
from services.runs import gate
from tests.commands.test_gate import run_cli
from tests.services.runs.test_comparability import bench_config, block
from tests.services.runs.test_gate import named, steady, stored
from tests.services.runs.test_runs import make_run


@pytest.mark.parametrize(
    ("text", "metric", "direction", "limit", "optional"),
    [
        ("error_rate:+2pp", "error_rate", 1, 2.0, False),
        ("error_rate:+2%", "error_rate", 1, 2.0, False),  # points too: there is no relative error
        ("success_rate:-0.5pp?", "success_rate", -1, 0.5, True),
        ("ttft_p90:+10%?", "ttft_s", 1, 10.0, True),
    ],
)
def test_fail_on_reads_failed_requests_and_optional_checks(
    text: str, metric: str, direction: int, limit: float, optional: bool
) -> None:
    (threshold,) = gate.parse_fail_on(text)
    assert (threshold.metric, threshold.direction, threshold.limit_pct) == (metric, direction, limit)
    assert threshold.optional is optional


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ttft_p90:+10pp", "ttft_p90 takes a relative limit"),
        ("error_rate:-1pp", "error_rate gets worse by a rise"),
        ("success_rate:+1pp", "success_rate gets worse by a fall"),
        ("ttft_p90:+10%??", "is not METRIC:"),
    ],
)
def test_bad_failed_request_checks_say_why(text: str, message: str) -> None:
    with pytest.raises(gate.GateSyntaxError, match=message):
        gate.parse_fail_on(text)


def test_failed_requests_fail_by_default_in_points(db_url: str) -> None:
    base = stored(0.100, steady(0.100))
    # 128 tokens per completed request, as asked (more would be max_tokens ignored).
    erring = stored(0.100, steady(0.100), completed=95, failed=5, output_tokens=95 * 128)
    result = gate.evaluate(base, [erring], gate.parse_fail_on("ttft_p90:+10%"))
    default = result.checks[-1]
    assert default.threshold.implicit and default.status == "fail"
    assert default.text.endswith(
        "error_rate (default check): 0.0% -> 5.0% (+5.0pp, limit +1pp): more failed requests "
        "than the limit allows"
    )
    assert result.exit_code == gate.EXIT_REGRESSION
    assert result.message == "regression: 1 failed, 1 passed (exit 1)"
    # Naming the check replaces the default: a looser limit passes.
    loose = gate.evaluate(base, [erring], gate.parse_fail_on("ttft_p90:+10%,error_rate:+10pp"))
    assert [c.threshold.text for c in loose.checks] == ["ttft_p90:+10%", "error_rate:+10pp"]
    assert loose.exit_code == gate.EXIT_PASS
    strict = gate.evaluate(base, [erring], gate.parse_fail_on("success_rate:-1pp"))
    assert strict.checks[0].text.endswith(
        "100.0% -> 95.0% (-5.0pp, limit -1pp): more failed requests than the limit allows"
    )


def test_not_measured_fails_with_its_exit_code_and_optional_is_skipped(db_url: str) -> None:
    base = stored(0.100, steady(0.100))
    other = stored(0.100, steady(0.100))
    result = gate.evaluate(base, [other], gate.parse_fail_on("ttft_p90:+10%,j_per_output_token:+5%"))
    assert result.exit_code == gate.EXIT_NOT_MEASURED
    assert result.message == "not measured: 1 not measured, 2 passed (exit 4)"
    assert gate.markdown(result).startswith("## Shootout gate: ❓ not measured")
    cases = {c.get("name"): c for c in ET.fromstring(gate.junit(result)).iter("testcase")}
    failure = cases["j_per_output_token:+5%"].find("failure")
    assert failure is not None and failure.get("type") == "not measured"
    optional = gate.evaluate(base, [other], gate.parse_fail_on("ttft_p90:+10%,j_per_output_token:+5%?"))
    assert optional.exit_code == gate.EXIT_PASS
    cases = {c.get("name"): c for c in ET.fromstring(gate.junit(optional)).iter("testcase")}
    assert cases["j_per_output_token:+5%?"].find("skipped") is not None
    assert cases["j_per_output_token:+5%?"].find("failure") is None


def test_every_exit_code_has_a_markdown_title() -> None:
    assert set(gate.TITLES) == set(gate.OUTCOMES) == {0, 1, 2, 3, 4, 5}


def rated(rate: float) -> int:
    """A run of the shared setup (same config: a repeat) with this output rate, no request rows."""
    return make_run(engines={"vllm": block(output_throughput_tok_s=rate)}, config=bench_config())


def test_stored_repeats_judge_a_candidate_of_the_baselines_setup(db_url: str) -> None:
    base = rated(500.0)
    for rate in (505.0, 495.0, 502.0):
        rated(rate)
    checks = gate.parse_fail_on("output_tok_s:-5%")
    slower = gate.evaluate(base, [rated(420.0)], checks)
    (check,) = named(slower)
    assert check.status == "fail" and check.noise.method == "repeats"
    assert check.noise.detail.startswith(
        "beyond run-to-run noise: 4 other stored runs of this setup range 495.0 tok/s to 505.0 tok/s"
    )
    assert slower.exit_code == gate.EXIT_REGRESSION
    # The candidate's own value is left out of its noise: a repeat inside the spread passes.
    same = gate.evaluate(base, [rated(498.0)], checks)
    assert named(same)[0].status == "pass" and named(same)[0].noise.status == "within"


def test_31_repeats_keep_the_student_t_interval() -> None:
    """Issue 57: a table of t quantiles that ended at 30 degrees fell to the normal's 1.96 (and
    dropped sqrt(1 + 1/n)) past it, so the interval of 31 repeats was 5.5% narrower than that of
    30 and a candidate inside the true interval read "beyond"."""
    from services.runs.gate import noise

    (threshold,) = gate.parse_fail_on("output_tok_s:-5%")
    for n in (30, 31):
        # n repeats of mean 100 and sample spread 1; the true half-width is t(n-1) sqrt(1 + 1/n).
        others = [100.0 + (1.0 if i % 2 else -1.0) * (n - 1) ** 0.5 / n**0.5 for i in range(n)]
        check = noise._from_repeats(threshold, others, 102.0)
        assert check.status == "within", (n, check.detail)
    assert noise.t_quantile_95(30) == pytest.approx(2.0423, abs=1e-4)


def test_stored_runs_with_failed_requests_are_not_repeats(db_url: str) -> None:
    """A run of the setup where the engine died half-way has a low rate: counted as a repeat,
    it would stretch the interval until a real 16% drop reads as noise."""
    base = rated(500.0)
    for rate in (505.0, 495.0, 502.0):
        rated(rate)
    make_run(
        engines={"vllm": block(output_throughput_tok_s=250.0, completed=50, failed=50)},
        config=bench_config(),
    )
    slower = gate.evaluate(base, [rated(420.0)], gate.parse_fail_on("output_tok_s:-5%"))
    (check,) = named(slower)
    assert check.status == "fail" and check.noise.method == "repeats"
    assert "4 other stored runs of this setup range 495.0 tok/s to 505.0 tok/s" in check.noise.detail


def test_alike_runs_that_are_not_repeats_say_what_differs(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config: dict[str, Any] = {**bench_config(), "seed": 7}
    first = make_run(engines={"vllm": block()}, config=bench_config())
    second = make_run(engines={"vllm": block()}, config=config)
    comparison = runs.compare_runs([first, second])
    assert comparison.repeat_notes == [
        (
            f"#{second} vllm looks like a repeat of #{first} vllm but is not one (its noise is "
            "judged within each run only): seed: not set vs 7"
        )
    ]
    code, out, _ = run_cli(capsys, "runs", "compare", str(first), str(second))
    assert code == 0 and "note: #2 vllm looks like a repeat of #1 vllm but is not one" in out
    # Repeats of one setup have no such note.
    assert (
        runs.compare_runs(
            [first, make_run(engines={"vllm": block()}, config=bench_config())]
        ).repeat_notes
        == []
    )


def slo_run(ttfts: list[float], goodput: float, seed: int) -> int:
    """A run with an SLO (TTFT at most 100 ms) whose requests took these TTFTs; each seed its
    own setup, so no run is a stored repeat of another and the within-run interval judges."""
    config = {**bench_config(), "slo": {"ttft_ms": 100.0}, "seed": seed}
    numbers = block(goodput_rps=goodput, completed=len(ttfts))
    return make_run(engines={"vllm": numbers}, config=config, requests={"vllm": ttfts})


def test_goodputs_noise_counts_which_requests_met_the_slos(db_url: str) -> None:
    """Goodput's within-run interval resamples which requests met the SLOs: 3 of 50 late
    requests are within what chance gives such a run, half of them late is beyond it. The
    request rate's spread, which stood for it before, is far narrower than either."""
    base = slo_run([0.050] * 50, goodput=10.0, seed=1)
    checks = gate.parse_fail_on("goodput_rps:-5%")
    few = slo_run([0.050] * 47 + [0.101] * 3, goodput=9.4, seed=2)
    (check,) = named(gate.evaluate(base, [few], checks))
    assert (check.status, check.noise.method, check.noise.status) == (
        "within noise",
        "bootstrap",
        "within",
    )
    half = slo_run([0.050] * 25 + [0.101] * 25, goodput=5.0, seed=3)
    (check,) = named(gate.evaluate(base, [half], checks))
    assert (check.status, check.noise.status) == ("fail", "beyond")
