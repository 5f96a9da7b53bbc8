"""GPU history from a Prometheus server's query_range (a loopback stand-in answering the
documented JSON)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from services.core.errors import EngineError, ValidationError
from services.telemetry.prom_api import query_range
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
