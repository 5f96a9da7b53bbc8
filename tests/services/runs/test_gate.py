"""The CI gate on stored runs: thresholds read or refused, a check fails only past its limit,
beyond noise and between comparable runs, and its Markdown and JUnit outputs parse."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest

from services.core.safe_text import md_line
from services.runs import gate
from tests.services.runs.test_comparability import bench_config, block
from tests.services.runs.test_runs import make_run


def stored(ttft_p50: float, samples: list[float], **fields: Any) -> int:
    """A run of one vllm engine: its summary's TTFT p50 (p90 = 1.5 x) and its requests' TTFTs."""
    numbers = block(**fields)
    numbers["ttft_s"] = {"mean": ttft_p50, "p50": ttft_p50, "p90": ttft_p50 * 1.5, "p99": ttft_p50 * 2}
    return make_run(engines={"vllm": numbers}, config=bench_config(), requests={"vllm": samples})


def steady(centre: float, n: int = 40) -> list[float]:
    return [centre * (1 + 0.01 * ((i % 5) - 2)) for i in range(n)]


def named(result: gate.GateResult) -> list[gate.Check]:
    """The checks --fail-on named (not the default error check)."""
    return [check for check in result.checks if not check.threshold.implicit]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--fail-on is empty"),
        ("ttft_p90:10%", "is not METRIC:+N% or METRIC:-N%"),
        ("ttft_p90:+10", "is not METRIC:+N% or METRIC:-N%"),
        ("ttft_p42:+10%", "unknown metric 'ttft_p42'; known: ttft_mean"),
        ("ttft_p90:-10%", "ttft_p90 gets worse by a rise: write +N%"),
        ("output_tok_s:+5%", "output_tok_s gets worse by a fall: write -N%"),
        ("usd_1m_output:-5%", "usd_1m_output gets worse by a rise: write +N%"),
        ("j_per_output_token:-5%", "j_per_output_token gets worse by a rise: write +N%"),
        ("output_tok_per_j:+5%", "output_tok_per_j gets worse by a fall: write -N%"),
        ("ttft_p90:+10%,ttft_p90:+20%", "names a metric twice"),
    ],
)
def test_bad_fail_on_says_what_it_expected(text: str, message: str) -> None:
    with pytest.raises(gate.GateSyntaxError, match=message.replace("+", r"\+").replace("(", r"\(")):
        gate.parse_fail_on(text)


def test_fail_on_reads_latencies_and_throughputs() -> None:
    found = gate.parse_fail_on(" TTFT_P90:+10% , output_tok_s:-5.5% ")
    assert [(t.metric, t.stat, t.direction, t.limit_pct) for t in found] == [
        ("ttft_s", "p90", 1, 10.0),
        ("output_throughput_tok_s", None, -1, 5.5),
    ]
    assert [t.text for t in found] == ["ttft_p90:+10%", "output_tok_s:-5.5%"]


def test_a_regression_beyond_noise_between_comparable_runs_fails(db_url: str) -> None:
    base = stored(0.100, steady(0.100))
    slower = stored(0.200, steady(0.200))
    result = gate.evaluate(base, [slower], gate.parse_fail_on("ttft_p90:+10%"))
    assert result.comparable and result.exit_code == gate.EXIT_REGRESSION
    (check,) = named(result)
    assert check.status == "fail" and check.change_pct == pytest.approx(100.0)
    assert check.noise.status == "beyond" and check.noise.method == "bootstrap"
    assert result.message == "regression: 1 failed, 1 passed (exit 1)"


def test_within_the_limit_passes(db_url: str) -> None:
    base = stored(0.100, steady(0.100))
    same = stored(0.105, steady(0.105))
    result = gate.evaluate(base, [same], gate.parse_fail_on("ttft_p90:+10%"))
    assert result.exit_code == gate.EXIT_PASS and result.checks[0].status == "pass"


def test_past_the_limit_but_within_noise_passes(db_url: str) -> None:
    rng = np.random.default_rng(7)
    base = stored(0.100, list(rng.uniform(0.02, 0.60, 25)))
    noisy = stored(0.120, list(rng.uniform(0.02, 0.62, 25)))
    result = gate.evaluate(base, [noisy], gate.parse_fail_on("ttft_p90:+10%"))
    (check,) = named(result)
    assert check.change_pct == pytest.approx(20.0) and check.status == "within noise"
    assert result.exit_code == gate.EXIT_PASS


def test_unknown_noise_fails_unless_allowed(db_url: str) -> None:
    # No request rows (an import of a summary): no within-run interval of the rate.
    base = make_run(engines={"vllm": block(output_throughput_tok_s=500.0)}, config=bench_config())
    fewer = make_run(engines={"vllm": block(output_throughput_tok_s=400.0)}, config=bench_config())
    checks = gate.parse_fail_on("output_tok_s:-5%")
    strict = gate.evaluate(base, [fewer], checks)
    (check,) = named(strict)
    assert check.status == "fail" and check.noise.status == "unknown"
    assert "past the limit, noise unknown (--allow-unknown-noise passes it)" in check.text
    assert strict.exit_code == gate.EXIT_REGRESSION
    lenient = gate.evaluate(base, [fewer], checks, allow_unknown_noise=True)
    assert named(lenient)[0].status == "noise unknown" and lenient.exit_code == gate.EXIT_PASS
    assert lenient.message == ("pass: 1 past the limit with noise unknown (allowed), 1 passed (exit 0)")


def test_cost_per_million_tokens_is_gated_as_a_rise(db_url: str) -> None:
    from services.core import cost

    def priced(usd_per_1m_output: float | None) -> int:
        figures = cost.Cost(3.6, usd_per_1m_output, None, None) if usd_per_1m_output else cost.Cost()
        return stored(0.100, steady(0.100), **{cost.SUMMARY_KEY: figures.to_json()})

    checks = gate.parse_fail_on("usd_1m_output:+10%")
    assert [(t.metric, t.stat, t.direction) for t in checks] == [("usd_per_1m_output", None, 1)]
    assert checks[0].label == "Cost per 1M output tokens"
    base, dearer = priced(1.00), priced(1.25)
    result = gate.evaluate(base, [dearer], checks)
    (check,) = named(result)
    # Same requests on both sides: the within-run interval of the output rate is tight.
    assert check.change_pct == pytest.approx(25.0) and check.status == "fail"
    assert check.noise.method == "bootstrap" and "the run's own noise" in check.noise.detail
    assert "$1.00 -> $1.25" in check.text
    assert result.exit_code == gate.EXIT_REGRESSION
    # A run without a price is not measured on cost, never a 100% change from $0.
    unpriced = gate.evaluate(base, [priced(None)], checks)
    assert named(unpriced)[0].status == "not measured"
    assert unpriced.exit_code == gate.EXIT_NOT_MEASURED


def energy_run(j_per_output_token: float | None) -> int:
    energy = (
        {
            "measured": True,
            "joules": 640.0,
            "method": "energy counter",
            "j_per_output_token": j_per_output_token,
            "output_tokens_per_j": 1 / j_per_output_token,
        }
        if j_per_output_token
        else {"measured": False, "reason": "no NVIDIA GPU here"}
    )
    return stored(0.100, steady(0.100), energy=energy)


def test_energy_is_gated_a_rise_per_token_and_a_fall_per_joule(db_url: str) -> None:
    checks = gate.parse_fail_on("j_per_output_token:+10%,output_tok_per_j:-10%")
    assert [(t.metric, t.stat, t.direction) for t in checks] == [
        ("j_per_output_token", None, 1),
        ("output_tokens_per_j", None, -1),
    ]
    assert [t.label for t in checks] == ["Energy per output token", "Output tokens per joule"]
    base, hungrier = energy_run(0.5), energy_run(0.625)
    strict = gate.evaluate(base, [hungrier], checks)
    per_token, per_joule = named(strict)
    assert per_token.change_pct == pytest.approx(25.0) and per_token.status == "fail"
    assert per_joule.change_pct == pytest.approx(-20.0) and per_joule.status == "fail"
    assert "0.5 J -> 0.625 J" in per_token.text
    thriftier = gate.evaluate(base, [energy_run(0.4)], checks)
    assert [c.status for c in named(thriftier)] == ["pass", "pass"]


def test_unmeasured_energy_is_not_measured_never_a_change_from_zero(db_url: str) -> None:
    checks = gate.parse_fail_on("j_per_output_token:+10%,output_tok_per_j:-10%")
    for base, candidate in ((energy_run(0.5), energy_run(None)), (energy_run(None), energy_run(0.5))):
        result = gate.evaluate(base, [candidate], checks)
        assert [c.status for c in named(result)] == ["not measured", "not measured"]
        assert result.exit_code == gate.EXIT_NOT_MEASURED
        assert all(c.change_pct is None for c in named(result))
    # A run from before energy (no block at all) reads the same.
    old = stored(0.100, steady(0.100))
    result = gate.evaluate(energy_run(0.5), [old], checks)
    assert [c.status for c in named(result)] == ["not measured", "not measured"]
    # Marked optional (a trailing ?), a missing figure is a skip: the gate passes.
    optional = gate.parse_fail_on("j_per_output_token:+10%?,output_tok_per_j:-10%?")
    result = gate.evaluate(energy_run(0.5), [old], optional)
    assert [c.status for c in named(result)] == ["skipped", "skipped"]
    assert result.exit_code == gate.EXIT_PASS
    assert result.message == "pass: 1 passed, 2 skipped (optional, not measured) (exit 0)"


def test_not_comparable_is_its_own_exit_and_the_override_judges(db_url: str) -> None:
    base = stored(0.100, steady(0.100))
    short = stored(0.200, steady(0.200), honoured_output_len=False, output_tokens=7_000)
    checks = gate.parse_fail_on("ttft_p90:+10%")
    result = gate.evaluate(base, [short], checks)
    assert not result.comparable and result.exit_code == gate.EXIT_NOT_COMPARABLE
    assert result.message.startswith(
        f"not comparable: the candidate #{short} vllm changed output length as served, fixed "
        "output length honoured"
    )
    assert [c.status for c in named(result)] == ["not judged"]  # past its limit, yet not judged
    anyway = gate.evaluate(base, [short], checks, allow_incomparable=True)
    assert anyway.exit_code == gate.EXIT_REGRESSION
    assert anyway.message.endswith("(compared although not comparable: --allow-incomparable) (exit 1)")
    assert "**Override:**" in gate.markdown(anyway)


def test_markdown_and_junit_parse(db_url: str) -> None:
    base = stored(0.100, steady(0.100))
    slower = stored(0.200, steady(0.200))
    result = gate.evaluate(base, [slower], gate.parse_fail_on("ttft_p90:+10%,ttft_p50:+150%"))
    text = gate.markdown(result)
    assert text.startswith("## Shootout gate: ❌ regression\n")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| | Engine | Check |") and len(rows) == 4  # header, 2 + default
    assert "| ❌ fail | vllm | `ttft_p90:+10%` | 150 ms | 300 ms | +100.0% |" in text
    assert "| ✅ pass | vllm | `ttft_p50:+150%` |" in text
    root = ET.fromstring(gate.junit(result))
    suite = root.find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("5", "1")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {
        "comparability",
        "requests completed",
        "ttft_p90:+10%",
        "ttft_p50:+150%",
        "error_rate:+1pp?",
    }
    assert cases["ttft_p90:+10%"].find("failure") is not None
    assert cases["comparability"].find("failure") is None


def test_junit_fails_the_comparability_case_when_not_comparable(db_url: str) -> None:
    base = stored(0.100, steady(0.100), cached_tokens=0)
    warm = stored(0.100, steady(0.100), cached_tokens=13_000)
    result = gate.evaluate(base, [warm], gate.parse_fail_on("ttft_p90:+10%"))
    assert result.exit_code == gate.EXIT_NOT_COMPARABLE
    failure = ET.fromstring(gate.junit(result)).find("testsuite/testcase/failure")
    assert failure is not None and failure.get("type") == "not comparable"
    assert failure.text == f"Prefix cache: #{base} vllm cold, #{warm} vllm warm"
    assert "⛔ not comparable" in gate.markdown(result)


@pytest.mark.parametrize("name", ["<img src=x>|[x](http://evil)", "*big*_it_`code`~~s~~\x1b[31m"])
def test_hostile_engine_names_stay_text_in_the_markdown(db_url: str, name: str) -> None:
    """Issue 57: the gate had its own escaper, which left `*`, `_` and backticks to format a
    job summary's table; it now writes names with the pages' one (safe_text.md_line)."""
    base = make_run(engines={name: block()}, config=bench_config(), requests={name: steady(0.1)})
    other = make_run(engines={name: block()}, config=bench_config(), requests={name: steady(0.1)})
    text = gate.markdown(gate.evaluate(base, [other], gate.parse_fail_on("ttft_p50:+10%")))
    shown = md_line(name.replace("\x1b", " "))
    assert f"| {shown} | `ttft_p50:+10%` |" in text and "\x1b" not in text
    # No markup character of the name is left unescaped, and no address for the autolinker.
    for row in (line for line in text.splitlines() if "ttft_p50:+10%` |" in line):
        cell = row.split(" | ")[1]
        assert not re.search(r"(?<!\\)[*_\[\]<>`|~]", cell) and "://" not in cell, cell
    ET.fromstring(gate.junit(gate.evaluate(base, [other], gate.parse_fail_on("ttft_p50:+10%"))))
