"""GPU history from a Prometheus server's query_range (a loopback stand-in answering the
documented JSON)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from services.errors import EngineError, ValidationError
from services.telemetry.prom_api import SIGNAL_LABEL, gpu_history, query_range
from tests.services.telemetry.support import MetricsServer, Route


def matrix(*series: tuple[dict, list]) -> str:
    return json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [
                    {"metric": labels, "values": [[ts, str(v)] for ts, v in values]}
                    for labels, values in series
                ],
            },
        }
    )


def test_query_range_reads_the_matrix_and_lowercases_labels() -> None:
    with MetricsServer() as server:
        server.routes["/api/v1/query_range"] = Route(
            body=matrix(
                (
                    {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "n7", "gpu": "0"},
                    [(10, 50), (25, 60)],
                )
            ),
            content_type="application/json",
        )
        series = query_range(server.url, "DCGM_FI_DEV_GPU_UTIL", 0, 30, 15)
        query = parse_qs(urlsplit(server.requests[-1][0]).query)
    assert series[0].labels["hostname"] == "n7"
    assert series[0].points == [(10.0, 50.0), (25.0, 60.0)]
    assert query["query"] == ["DCGM_FI_DEV_GPU_UTIL"] and query["step"] == ["15"]


def test_gpu_history_builds_a_sample_frame_from_one_combined_query() -> None:
    with MetricsServer() as server:
        labels = {"hostname": "n7", "gpu": "1", "modelName": "NVIDIA H100"}
        server.routes["/api/v1/query_range"] = Route(
            body=matrix(
                ({**labels, SIGNAL_LABEL: "gpu_utilization_pct"}, [(100, 70), (115, 70)]),
                ({**labels, SIGNAL_LABEL: "gpu_memory_used_bytes"}, [(100, 2**30), (115, 2**30)]),
            ),
            content_type="application/json",
        )
        frame = gpu_history(server.url, 100, 130, 15, ["gpu_utilization_pct", "gpu_memory_used_bytes"])
        queries = [parse_qs(urlsplit(path).query)["query"][0] for path, *_ in server.requests]
    assert (
        len(queries) == 1
        and "DCGM_FI_DEV_GPU_UTIL" in queries[0]
        and "DCGM_FI_DEV_FB_USED" in queries[0]
    )
    assert list(frame["source"].unique()) == ["gpu:n7/1"]
    assert list(frame["ts"]) == [100.0, 115.0]
    assert list(frame["gpu_utilization_pct"]) == [70.0, 70.0]
    assert frame["_label"].iloc[0] == "NVIDIA H100"


def test_prometheus_errors_are_clear() -> None:
    with MetricsServer() as server:
        server.routes["/api/v1/query_range"] = Route(
            status=400,
            body=json.dumps({"status": "error", "error": "parse error"}),
            content_type="application/json",
        )
        with pytest.raises(EngineError, match="parse error"):
            query_range(server.url, "bad(", 0, 10, 1)
    with pytest.raises(EngineError, match="connection refused"):
        query_range(server.url, "up", 0, 10, 1)
    with pytest.raises(ValidationError):
        query_range(server.url, "up", 10, 0, 1)
    with pytest.raises(ValidationError):
        gpu_history(server.url, 0, 10, 1, ["kv_cache_usage"])
