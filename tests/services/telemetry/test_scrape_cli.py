"""`python cli.py scrape URL [--json]`: detected kind and normalised signals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from tests.services.telemetry.support import MetricsServer, Route, VllmLike


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["scrape", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_scrape_json_from_a_metrics_url(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    engine = VllmLike()
    engine.child(engine.running).set(2)
    with MetricsServer() as server:
        server.routes["/metrics"] = Route(body=engine.text)
        code, out, _ = run(capsys, server.url + "/metrics", "--json", "--interval", "0.2")
    assert code == 0
    payload = json.loads(out)
    assert payload["kind"] == "vllm" and payload["detected_by"] == "metrics"
    signals = payload["sources"][0]["signals"]
    assert signals["requests_running"] == {"value": 2.0, "unit": "requests", "status": "ok"}
    assert signals["generation_tokens_per_s"]["value"] == 0.0
    assert signals["spec_decode_acceptance"]["status"] == "not_reported"
    assert signals["spec_decode_acceptance"]["reason"] == "not reported by vLLM"
    assert signals["ttft_p50_s"]["status"] == "no_data"


def test_scrape_text_output_and_kind_override(
    db_url: str, capsys: pytest.CaptureFixture[str], shared_dir: Path
) -> None:
    with MetricsServer() as server:
        server.routes["/metrics"] = Route(
            body=(shared_dir / "fixtures/metrics/llamacpp.txt").read_text()
        )
        code, out, _ = run(capsys, server.url + "/metrics", "--kind", "llamacpp", "--interval", "0")
    assert code == 0
    assert "llama.cpp (llamacpp, detected by given)" in out
    assert "not reported by llama.cpp" in out


def test_scrape_dcgm_exporter(db_url: str, capsys: pytest.CaptureFixture[str], shared_dir: Path) -> None:
    with MetricsServer() as server:
        server.routes["/metrics"] = Route(
            body=(shared_dir / "fixtures/metrics/dcgm_exporter.txt").read_text()
        )
        code, out, _ = run(capsys, server.url + "/metrics", "--json")
    payload = json.loads(out)
    assert code == 0 and payload["kind"] == "dcgm"
    assert [s["source"] for s in payload["sources"]] == ["gpu:gpu-node-07/0", "gpu:gpu-node-07/1"]


def test_scrape_failures_are_one_line_and_non_zero(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with MetricsServer() as server:
        server.routes["/metrics"] = Route(body="some_unknown_metric 1\n")
        code, _, err = run(capsys, server.url + "/metrics")
        assert code == 1 and "no known engine" in err and err.count("\n") == 1
        code, _, err = run(capsys, server.url + "/metrics", "--kind", "nope")
        assert code == 1 and "Unknown kind" in err
    code, _, err = run(capsys, server.url + "/metrics")
    assert code == 1 and err.startswith("error:") and "connection refused" in err
