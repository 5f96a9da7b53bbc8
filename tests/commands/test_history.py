"""`cli.py history` against the real test Prometheus: the normalised series as JSON, a run's
window, and one clear line (exit 1) for a server that is down, a bad selector or too many points."""

from __future__ import annotations

import json
from datetime import UTC

from services.engines import endpoints
from tests.commands.test_cli import cli
from tests.support.prometheus import SAMPLES_ORIGIN, TEST_SELECTOR, wait_for_scrapes


def test_history_of_a_job_as_json(prometheus: str) -> None:
    wait_for_scrapes(
        prometheus, "resetting", at_least=30 + 5 + 2
    )  # the window below after a whole rate window
    result = cli(
        "history",
        "--prometheus",
        prometheus,
        "--selector",
        TEST_SELECTOR,
        "--job",
        "resetting",
        "--since",
        "30s",
        "--step",
        "2",
        "--rate-window",
        "5",
        "--signal",
        "generation_tokens_per_s",
        "--signal",
        "kv_cache_usage",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["selector"] == TEST_SELECTOR and payload["step_s"] == 2
    (source,) = payload["sources"]  # GPU signals were not asked for
    assert source["source"] == "engine:" + SAMPLES_ORIGIN.split("//", 1)[1] and source["kind"] == "vllm"
    assert set(source["signals"]) == {"generation_tokens_per_s", "kv_cache_usage"}
    rates = [v for _, v in source["signals"]["generation_tokens_per_s"]["points"] if v is not None]
    assert rates and all(7 < v < 13 for v in rates)
    assert source["signals"]["kv_cache_usage"]["unit"] == "ratio"


def test_history_of_a_registered_engine_for_a_run(db_url: str, prometheus: str) -> None:
    endpoints.add_engine(
        "resetting", SAMPLES_ORIGIN, kind="vllm", metrics_url=SAMPLES_ORIGIN + "/resetting"
    )
    from datetime import datetime, timedelta

    from db.models import Run
    from db.session import session_scope

    now = datetime.now(UTC)
    with session_scope() as session:
        run = Run(
            kind="import",
            name="from elsewhere",
            status="done",
            engine_names="resetting",
            started_at=now - timedelta(seconds=20),
            finished_at=now,
        )
        session.add(run)
        session.flush()
        run_id = run.id
    result = cli(
        "history", "--prometheus", prometheus, "--run", str(run_id), "--no-gpus", "--rate-window", "5"
    )
    assert result.returncode == 0, result.stderr
    assert "engine:resetting (vLLM, scrape target)" in result.stdout
    assert "kv_cache_usage" in result.stdout and "not reported by vLLM" in result.stdout


def test_history_failures_are_one_line(prometheus: str) -> None:
    for args, expected in (
        (
            ("--prometheus", "http://127.0.0.1:9", "--job", "vllm"),
            "error: Prometheus at http://127.0.0.1:9: connection refused",
        ),
        (
            ("--prometheus", prometheus, "--job", "vllm", "--since", "2d", "--step", "1"),
            "points a series; Prometheus answers at most 11,000",
        ),
        (
            ("--prometheus", prometheus, "--selector", "up) or (1", "--job", "vllm"),
            "is not a list of label matchers",
        ),
        (("--prometheus", prometheus, "--since", "soon"), "is not a duration"),
        (("--prometheus", prometheus, "--signal", "speed"), "Unknown signal(s) speed"),
    ):
        result = cli("history", *args)
        assert result.returncode == 1, (args, result.stdout)
        assert len(result.stderr.strip().splitlines()) == 1 and expected in result.stderr, result.stderr
