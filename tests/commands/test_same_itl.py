"""`cli.py ask` and `cli.py bench` report the same ITL for the same stream shape (issue 14:
64 tokens, 4 per SSE chunk, TTFT 50 ms, 10 ms per token read 10.00 ms in `ask` and 9.52 ms
in `bench`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.engines.endpoints import add_engine
from tests.support.scripted_server import ScriptedServer

REPO_ROOT = Path(__file__).resolve().parents[2]
SHAPE = {"ttft": 50, "itl": 10, "tokens": 64, "tpc": 4}
#: 15 chunk gaps of 40 ms spread over the 63 tokens after the first.
EXPECTED_ITL_MS = 15 * 40 / 63


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "cli.py", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )


def test_ask_and_bench_print_the_same_itl_mean_for_four_tokens_per_chunk(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    model = scripted_server.model(**SHAPE)
    add_engine("first", scripted_server.base_url, kind="vllm", model=model)
    add_engine("second", scripted_server.base_url, kind="vllm", model=model)
    asked = cli("ask", "Count.", "--json")
    assert asked.returncode == 0, asked.stderr
    answers = json.loads(asked.stdout)["engines"]
    ask_itl_ms = [answers[name]["itl_mean_s"] * 1000 for name in ("first", "second")]

    benched = cli(
        "bench",
        "--url",
        scripted_server.base_url,
        "--model",
        model,
        "--concurrency",
        "1",
        "--requests",
        "2",
        "--input-len",
        "8",
        "--output-len",
        "64",
        "--timeout",
        "30",
        "--json",
        "-",
        "--quiet",
    )
    assert benched.returncode == 0, benched.stderr
    (block,) = json.loads(benched.stdout)["engines"].values()
    bench_itl_ms = block["itl_s"]["mean"] * 1000
    tpot_ms = block["tpot_s"]["mean"] * 1000

    # The old fault was a definition: `ask` divided the stream's time by one count and `bench` by
    # another. Each command's own numbers must obey the one definition exactly, whatever the
    # clock did: ITL = (E2E - TTFT) / (output tokens - 1).
    for name in ("first", "second"):
        answer = answers[name]
        own = (answer["e2e_s"] - answer["ttft_s"]) / (answer["completion_tokens"] - 1)
        assert answer["itl_mean_s"] == pytest.approx(own, rel=1e-6), name
    per_request_tokens = block["output_tokens"] / block["completed"]
    own = (block["e2e_s"]["mean"] - block["ttft_s"]["mean"]) / (per_request_tokens - 1)
    assert block["tpot_s"]["mean"] == pytest.approx(own, rel=1e-6)
    assert bench_itl_ms == pytest.approx(tpot_ms, abs=1e-9)
    # And the stream's shape comes through. A loaded machine delivers the last chunk late and that
    # lateness is spread over 63 tokens (CI once saw +0.38 ms), so this bound is the shape's, not
    # the definition's: the definition is held exactly above.
    for value in (*ask_itl_ms, bench_itl_ms):
        assert value == pytest.approx(EXPECTED_ITL_MS, abs=1.0)
