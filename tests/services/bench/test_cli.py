"""`python cli.py bench`: JSON summary, same database, exit codes, one line for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scripted_server import ScriptedServer

REPO_ROOT = Path(__file__).resolve().parents[3]


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "cli.py", "bench", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(os.environ),
    )


def test_url_run_writes_the_json_summary_and_the_database(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    result = bench(
        "--url",
        scripted_server.base_url,
        "--model",
        scripted_server.model(ttft=5, itl=1, tokens=32),
        "--concurrency",
        "4",
        "--requests",
        "12",
        "--input-len",
        "16",
        "--output-len",
        "8",
        "--timeout",
        "30",
        "--usd-per-hour",
        "3.6",
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(out.read_text())
    assert payload["status"] == "finished"
    ((name, block),) = payload["engines"].items()
    # The price given for the URL is the run's, and its cost is in the summary and the table.
    assert block["cost"]["usd_per_hour"] == 3.6
    assert block["cost"]["usd_per_1m_output"] == pytest.approx(
        1e6 / (block["output_throughput_tok_s"] * 1000)
    )
    assert block["cost"]["usd_per_1m_output_goodput"] is None
    assert f"{name}: 3.6 $/h, $" in result.stdout
    assert name == scripted_server.base_url.split("//")[1].removesuffix("/v1")
    assert (block["completed"], block["failed"], block["sent"]) == (12, 0, 12)
    assert block["output_tokens"] == 12 * 8
    for metric in ("ttft_s", "itl_s", "tpot_s", "e2e_s"):
        assert {"mean", "p50", "p90", "p99"} <= set(block[metric])
    assert block["errors_by_class"] == {}
    assert "TTFT p50" in result.stdout  # the table for people
    from services.bench.jobs import get_run

    assert get_run(payload["run_id"]).status == "finished"


def test_failing_requests_end_normally_with_counts(db_url: str, scripted_server: ScriptedServer) -> None:
    result = bench(
        "--url",
        scripted_server.base_url,
        "--model",
        scripted_server.model(fault="http", status=503),
        "--kind",
        "vllm",
        "--concurrency",
        "2",
        "--requests",
        "5",
        "--json",
        "-",
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    block = next(iter(json.loads(result.stdout)["engines"].values()))
    assert (block["completed"], block["failed"], block["sent"]) == (0, 5, 5)
    assert block["errors_by_class"] == {"http_status": 5}


def test_registered_engines_side_by_side(db_url: str, scripted_server: ScriptedServer) -> None:
    from services.engines.endpoints import add_engine

    add_engine("one", scripted_server.base_url, kind="vllm", model=scripted_server.model(ttft=5, itl=1))
    add_engine("two", scripted_server.base_url, kind="vllm", model=scripted_server.model(ttft=9, itl=1))
    result = bench(
        "--engine",
        "one",
        "--engine",
        "two",
        "--rate",
        "50",
        "--requests",
        "6",
        "--output-len",
        "4",
        "--json",
        "-",
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    engines = json.loads(result.stdout)["engines"]
    assert list(engines) == ["one", "two"]
    assert engines["one"]["ttft_s"]["p50"] < engines["two"]["ttft_s"]["p50"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--engine", "nope", "--requests", "3"], 1, "error: No engine named 'nope'"),
        (["--requests", "3"], 1, "error: Say what to benchmark"),
        (
            ["--url", "http://127.0.0.1:9", "--concurrency", "2", "--rate", "1", "--requests", "3"],
            1,
            "not both",
        ),
        (
            ["--url", "http://127.0.0.1:9", "--concurrency", "x", "--requests", "3"],
            2,
            "argument --concurrency: expected a whole number from 1 to",
        ),
        (["--url", "http://127.0.0.1:9", "--concurrency", "2"], 1, "--requests N or --duration S"),
        (["--url", "ftp://x", "--requests", "3"], 1, "Unsupported URL scheme 'ftp'"),
        (
            [
                "--url",
                "http://127.0.0.1:9",
                "--kind",
                "vllm",
                "--model",
                "m",
                "--requests",
                "3",
                "--workload",
                "file",
            ],
            1,
            "needs a JSONL",
        ),
        (
            [
                "--url",
                "http://127.0.0.1:9",
                "--kind",
                "vllm",
                "--model",
                "m",
                "--requests",
                "3",
                "--sweep",
                "rate",
            ],
            1,
            "needs its load levels",
        ),
        (
            ["--url", "http://127.0.0.1:9", "--requests", "3", "--workers", "many"],
            2,
            "expected a number from 1",
        ),
        (
            ["--url", "http://127.0.0.1:9", "--requests", "3", "--usd-per-hour", "$3.50"],
            1,
            "not a plain number",
        ),
        (
            ["--url", "http://127.0.0.1:9", "--requests", "3", "--usd-per-hour", "3,50"],
            1,
            "not a plain number",
        ),
        (["--url", "http://127.0.0.1:9", "--requests", "3", "--usd-per-hour", "-2"], 1, "above 0"),
        (["--url", "http://127.0.0.1:9", "--requests", "3", "--usd-per-hour", "0"], 1, "above 0"),
        (
            ["--url", "http://127.0.0.1:9", "--requests", "3", "--usd-per-hour", "25000"],
            1,
            "really per hour",
        ),
        (
            ["--engine", "x", "--requests", "3", "--usd-per-hour", "2"],
            1,
            "engines edit NAME --usd-per-hour",
        ),
    ],
)
def test_bad_input_exits_non_zero_with_one_line(
    db_url: str, args: list[str], code: int, message: str
) -> None:
    result = bench(*args)
    assert result.returncode == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.stderr


def test_a_sweep_prints_every_step_and_each_engines_result(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    result = bench(
        "--url",
        scripted_server.base_url,
        "--model",
        scripted_server.model(ttft=5, itl=1, tokens=8),
        "--kind",
        "vllm",
        "--sweep",
        "concurrency",
        "--sweep-values",
        "1,2",
        "--requests",
        "4",
        "--output-len",
        "8",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "concurrency 1, 2, 4 requests per step" in lines[0]
    assert lines[1] == "steps (sweep over concurrency):"
    steps = [line.split() for line in lines[3:5]]
    assert [row[1] for row in steps] == ["1", "2"] and all(row[2] == "4" for row in steps)
    assert "per engine, the step reported as its result:" in lines


def test_workers_run_prints_the_self_check(db_url: str, scripted_server: ScriptedServer) -> None:
    result = bench(
        "--url",
        scripted_server.base_url,
        "--model",
        scripted_server.model(ttft=5, itl=1, tokens=8),
        "--kind",
        "vllm",
        "--concurrency",
        "4",
        "--requests",
        "20",
        "--output-len",
        "8",
        "--workers",
        "2",
        "--no-calibrate",
        "--json",
        "-",
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    block = next(iter(payload["engines"].values()))
    assert (block["sent"], block["completed"]) == (20, 20)
    assert block["generator"]["workers"] == 2
    # The table (on stderr beside --json -) says what the self-check found, with its figures.
    check = [line for line in result.stderr.splitlines() if "loop lag p50/p99" in line]
    assert len(check) == 1 and any(
        verdict in check[0]
        for verdict in ("generator kept up (2 worker(s))", "CLIENT-BOUND (", "could not check (")
    )
    assert "self-check: " in result.stderr


def test_the_table_says_what_the_self_check_means_then_its_evidence() -> None:
    """Issue 36 in the CLI: the verdict, what it means for the figures and what to do, then
    each engine's raw figures; issue 31: an engine too short to check says so."""
    from commands.bench import _table
    from services.bench.selfcheck import WorkerCheck, report
    from services.bench.stats import summarize_engine

    lagging = report(
        [WorkerCheck(loop_lag_s=[0.0002] * 95 + [0.01242] * 5, cpu_s=0.02, wall_s=1.0)], open_loop=False
    )
    short = report([WorkerCheck(loop_lag_s=[0.0002] * 12, cpu_s=0.01, wall_s=0.13)], open_loop=False)
    engines = {
        "a": {**summarize_engine([]), "generator": lagging},
        "b": {**summarize_engine([]), "generator": short},
    }
    lines = _table({"run_id": 7, "status": "finished", "engines": engines}).splitlines()
    at = lines.index(
        "self-check: Client-bound: the load generator, not the engine, limited some of these figures."
    )
    assert lines[at + 1].startswith("  a: TTFT and ITL percentiles may be up to ~12.4 ms too high")
    assert "What to do: run it again on a quieter machine" in lines[at + 1]
    assert lines[at + 2].startswith(
        "  b: The load generator could not check itself (the run lasted 0.13 s"
    )
    assert lines[at + 3].startswith("  evidence: a: CLIENT-BOUND (event-loop lag p99 12.4 ms > 2 ms)")
    assert lines[at + 4].startswith("  evidence: b: could not check (the run lasted 0.13 s")
    assert "loop lag p50/p99" in lines[at + 4] and lines[at + 5] == "caveats:"


def test_a_run_prints_its_caveats_under_the_table(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """The caveats every page shows (services.bench.caveats) under the CLI's table too: the
    warm-up from the run's config and an engine's short answers; --json keeps the summary."""
    out = tmp_path / "out.json"
    result = bench(
        "--url",
        scripted_server.base_url,
        "--model",
        scripted_server.model(ttft=1, itl=1, tokens=4),
        "--kind",
        "vllm",
        "--requests",
        "3",
        "--warmup",
        "2",
        "--output-len",
        "8",
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index("caveats:")
    caveats = lines[at + 1 :]
    assert any(line.startswith("  Load: concurrency") for line in caveats)
    assert any(line.startswith("  Warm-up: 2 request(s) per engine") for line in caveats)
    assert any("did not honour the fixed output length: 3 answers" in line for line in caveats)
    assert "caveats" not in json.loads(out.read_text())


def test_the_table_says_where_each_engines_time_went() -> None:
    from commands.bench import _table
    from services.bench.stats import RequestRecord, summarize_engine
    from services.core.measure import EngineTimes

    timed = [
        RequestRecord(
            "v",
            i,
            True,
            start_s=float(i),
            ttft_s=0.03,
            e2e_s=0.3,
            output_tokens=8,
            engine_times=EngineTimes(queue_s=0.001, prefill_s=0.02, decode_s=0.27, source="metrics"),
        )
        for i in range(3)
    ]
    silent = [
        RequestRecord("s", i, True, start_s=float(i), ttft_s=0.03, e2e_s=0.3, output_tokens=8)
        for i in range(3)
    ]
    engines = {"v": summarize_engine(timed), "s": summarize_engine(silent)}
    config = {"engines": [{"name": "v", "kind": "vllm"}, {"name": "s", "kind": "sglang"}]}
    lines = _table({"run_id": 7, "status": "finished", "engines": engines}, config).splitlines()
    at = lines.index("where the time went (the engine's own times; ms):")
    assert lines[at + 1].startswith(
        "  v: mean E2E 300.0 ms = queue 1.0 + prefill 20.0 + decode 270.0 + rest"
    )
    assert lines[at + 2] == "  s: where the time went: not reported by SGLang"


def test_energy_is_measured_or_says_why_not_here(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    from services.telemetry.energy.meter import EnergyMeter

    # What this machine can read decides which answer is right: no GPU and no readable RAPL
    # (most VMs, this one) must read "not measured here: <reason>", never 0 joules.
    plan = EnergyMeter({"here": scripted_server.base_url}).plan("here")
    out = tmp_path / "out.json"
    result = bench(
        "--url",
        scripted_server.base_url,
        "--model",
        scripted_server.model(ttft=1, itl=1, tokens=8),
        "--requests",
        "4",
        "--output-len",
        "8",
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    ((block,),) = [list(json.loads(out.read_text())["engines"].values())]
    energy = block["energy"]
    if plan.source is None:
        assert energy == {"measured": False, "reason": plan.reason}
        assert f"energy: not measured here: {plan.reason}" in result.stdout
        assert "no NVIDIA GPU here" in result.stdout
    else:
        assert energy["measured"] is True and energy["joules"] >= 0
        assert energy["j_per_output_token"] == pytest.approx(energy["joules"] / block["output_tokens"])
        assert "energy: " in result.stdout and " J over " in result.stdout
