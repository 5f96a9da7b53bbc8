"""The gate's two error rates on served runs: `shootout bench --baseline RUN --fail-on` at the
README's limits against the scripted server, whose requests each draw their own TTFT and ITL
(`spread`), as a real engine's do. The draws are seeded (the nth request of one scenario draws
the same), so what varies from one run of this test to the next is the machine, as in CI.

Each run is its own setup (the scenario's salt is in the model name), as a fresh CI database sees
a candidate: no stored repeats, so the within-run intervals judge, and the machine's own jitter
between two runs (the suite runs beside this test) must stay inside them.

- False alarms: 20 consecutive pairs of runs of one server (100 requests at concurrency 16,
  TTFT 150 ms: long enough that the machine's jitter of some 10 ms stays inside +10%): none fails.
- Detection: 20 candidates whose output rate is 15% lower (inter-token time stretched): at
  least 18 fail with the regression exit code on output_tok_s (20 on a quiet machine; with the
  six local engines idle beside it, one read -4.9% against a slow baseline, inside the limit).

- Stalls (issue 55): 10 candidates of 200 requests, each with one request that pauses 3 s
  mid-stream: all 10 fail with the stall finding (a stall is not a matter of chance: it is
  judged against the run's own waits, so 10 of 10).

tests/services/runs/test_gate_rates.py holds the same rates on drawn runs of the README's size.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.runs import gate
from tests.commands.test_gate import run_cli
from tests.support.scripted_server import ScriptedServer, scenario_model

README_CHECKS = "ttft_p90:+10%,output_tok_s:-5%"
REQUESTS, CONCURRENCY, TOKENS = 100, 16, 16
TTFT_MS, ITL_MS, SPREAD = 150.0, 3.0, 0.3
#: The inter-token time that makes the mean request 1/0.85 as long: 15% fewer tokens/s.
SLOWER_ITL_MS = ((TTFT_MS + (TOKENS - 1) * ITL_MS) / 0.85 - TTFT_MS) / (TOKENS - 1)


def bench(
    capsys: pytest.CaptureFixture[str],
    server: ScriptedServer,
    salt: int,
    itl: float,
    *gate_args: str,
    requests: int = REQUESTS,
    **scenario: object,
) -> tuple[int, int, str]:
    """(exit code, run id, what it printed) of one benchmark run of its own setup."""
    model = scenario_model(
        ttft=TTFT_MS, itl=itl, tokens=TOKENS, spread=SPREAD, salt=salt, vary=1, **scenario
    )
    code, out, err = run_cli(
        capsys,
        "bench",
        "--url",
        server.root_url,
        "--model",
        model,
        "--concurrency",
        str(CONCURRENCY),
        "--requests",
        str(requests),
        "--input-len",
        "32",
        "--output-len",
        str(TOKENS),
        "--json",
        f"run{salt}.json",
        "--quiet",
        # The gate reads no engine metrics, and starting their recorder costs half a second a run.
        "--no-engine-metrics",
        *gate_args,
    )
    run_id = json.loads(Path(f"run{salt}.json").read_text())["run_id"]
    return code, run_id, out + err


def test_served_runs_hold_no_false_alarm_and_catch_a_15_percent_drop(
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    with ScriptedServer() as server:
        code, previous, said = bench(capsys, server, 0, ITL_MS)
        assert code == 0, said
        false_alarms, caught, missed = [], [], []
        for i in range(1, 21):
            # The rates under test are the noise verdict's: the shared machine often leaves the
            # generator client-bound (exit 4 without the flag; tested on its own elsewhere).
            gate_args = ("--baseline", str(previous), "--fail-on", README_CHECKS, "--allow-untrusted")
            code, slower, said = bench(capsys, server, 100 + i, SLOWER_ITL_MS, *gate_args)
            if code == gate.EXIT_REGRESSION and "output_tok_s" in said:
                caught.append(slower)
            else:
                missed.append(said)
            code, current, said = bench(capsys, server, i, ITL_MS, *gate_args)
            if code != gate.EXIT_PASS:
                false_alarms.append(said)
            previous = current
    assert false_alarms == [], "\n".join(false_alarms)
    # The machine moves a run's rate by a few percent too (idle engines polling beside it):
    # a slower run that drew a fast moment can read as -5% against a slow baseline.
    assert len(caught) >= 18, "\n".join(missed)


STALL_REQUESTS = 200


def test_one_stall_in_200_is_caught_10_times_of_10(
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    with ScriptedServer() as server:
        code, base, said = bench(capsys, server, 0, ITL_MS, requests=STALL_REQUESTS)
        assert code == 0, said
        missed = []
        for i in range(1, 11):
            gate_args = ("--baseline", str(base), "--fail-on", README_CHECKS, "--allow-untrusted")
            stall = {"fault": "stall", "at": TOKENS // 2, "delay": 3000, "every": STALL_REQUESTS}
            code, _, said = bench(
                capsys, server, 200 + i, ITL_MS, *gate_args, requests=STALL_REQUESTS, **stall
            )
            if code != gate.EXIT_REGRESSION or " stall: " not in said:
                missed.append(said)
    assert missed == [], "\n".join(missed)
