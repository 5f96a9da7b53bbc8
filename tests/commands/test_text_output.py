"""The text (not --json) output of `shootout history` and `shootout scrape`, read from their
typed records: each source, its signals with their values or reasons, and a GPU's processes."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from commands import history as history_command
from commands import scrape as scrape_command
from services.engines.signals import signal_names
from services.telemetry import prom_history
from services.telemetry.prom_api import PromServer
from services.telemetry.scraper import ScrapeResult
from services.telemetry.snapshot import Snapshot


def test_history_prints_each_source_its_points_and_what_it_does_not_report(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    series = prom_history.HistorySeries(
        source="engine:a",
        kind="vllm",
        label="vLLM",
        ts=np.array([0.0, 2.0, 4.0]),
        signals={"kv_cache_usage": np.array([0.5, np.nan, 0.25])},
        not_reported={"prefix_cache_hit_rate": "not reported by vLLM"},
        matched_by="scrape target",
    )
    bare = prom_history.HistorySeries(
        "gpu:h/0", "gpu", "GPU", np.array([0.0]), {"gpu_power_w": np.array([np.nan])}
    )
    found = prom_history.PromHistory(
        PromServer("http://prom:9090"), 0.0, 4.0, 2.0, 5.0, [series, bare], ["a note"]
    )
    monkeypatch.setattr(prom_history, "history", lambda *args, **kwargs: found)
    args = argparse.Namespace(
        prometheus="http://prom:9090",
        selector=None,
        token_env=None,
        timeout=5.0,
        engine=None,
        run=None,
        job="a",
        since="30s",
        step=2.0,
        signal=None,
        no_gpus=False,
        rate_window=5.0,
        json=False,
    )
    assert history_command.handle(args) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Prometheus http://prom:9090 · 2 s step · rate window 5 s",
        "note: a note",
        "",
        "engine:a (vLLM, scrape target)",
        "  kv_cache_usage             2 point(s), last 0.25, max 0.5",
        "  prefix_cache_hit_rate      not reported by vLLM",
        "",
        "gpu:h/0 (GPU)",
        "  gpu_power_w                no data",
    ]


def test_scrape_prints_each_signal_its_reason_and_a_gpus_processes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = Snapshot(
        "engine:a", "vllm", "vLLM", 1.0, values={"kv_cache_usage": 0.5, "requests_running": None}
    )
    gpu = Snapshot(
        "gpu:0",
        "gpu",
        "H100",
        1.0,
        values={"gpu_power_w": 300.0},
        processes=[{"pid": 7, "used_bytes": 2**30, "name": "vllm"}, {"used_bytes": None, "name": "pod"}],
    )
    result = ScrapeResult("http://a", "http://a/metrics", "vllm", "vLLM", "owned_by", 1.0, [engine, gpu])
    monkeypatch.setattr(scrape_command, "scrape_once", lambda *args, **kwargs: result)
    args = argparse.Namespace(url="http://a", kind=None, interval=1.0, timeout=5.0, json=False)
    assert scrape_command.handle(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "vLLM (vllm, detected by owned_by) at http://a/metrics"
    assert lines[1:3] == ["", "engine:a (vLLM)"]
    engine_lines = lines[3 : lines.index("gpu:0 (H100)") - 1]
    assert len(engine_lines) == len(signal_names("engine"))
    assert engine_lines[0] == "  KV-cache usage               50.0 %"
    assert sum(line.endswith("no data in the window") for line in engine_lines) == 1
    assert sum(line.endswith("not reported by vLLM") for line in engine_lines) == len(engine_lines) - 2
    assert lines[-2:] == ["  process vllm: 1073741824", "  process pod: None"]
