"""dcgm-exporter's energy counter, from the recorded exporter text."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.telemetry.energy.dcgm import DcgmEnergySource, energy_readings
from services.telemetry.energy.records import EnergyUnavailable
from tests.services.telemetry.support import MetricsServer, Route
from tests.support.metrics_text import parse_text


def fixture_text(shared_dir: Path) -> str:
    return (shared_dir / "fixtures/metrics/dcgm_exporter.txt").read_text()


def test_the_fixture_counter_reads_per_gpu_in_joules(shared_dir: Path) -> None:
    text = fixture_text(shared_dir)
    for variant in (text, text.replace("Hostname=", "hostname=")):
        readings = energy_readings(parse_text(variant), "fallback")
        assert [(r.device, r.joules) for r in readings] == [
            ("gpu-node-07 GPU 0: NVIDIA H100 80GB HBM3", 418_223_119.405),
            ("gpu-node-07 GPU 1: NVIDIA H100 80GB HBM3", 402_917_006.311),
        ]


def test_over_http_and_a_missing_counter(shared_dir: Path) -> None:
    text = fixture_text(shared_dir)
    with MetricsServer() as server:
        server.routes["/metrics"] = Route(body=text)
        source = DcgmEnergySource(server.url)
        assert len(source.read()) == 2
        later = text.replace("418223119405", "418223619405")
        server.routes["/metrics"] = Route(body=later)
        assert source.read()[0].joules - 418_223_119.405 == pytest.approx(500.0)
        without = "\n".join(line for line in text.splitlines() if "TOTAL_ENERGY_CONSUMPTION" not in line)
        server.routes["/metrics"] = Route(body=without)
        with pytest.raises(EnergyUnavailable, match="does not export DCGM_FI_DEV_TOTAL_ENERGY"):
            source.read()
        server.routes["/metrics"] = Route(status=503, body="")
        with pytest.raises(EnergyUnavailable, match="HTTP 503"):
            source.read()
    with pytest.raises(EnergyUnavailable, match="connection refused"):
        DcgmEnergySource(server.url).read()
