"""Remote GPUs' energy from dcgm-exporter: `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`, a counter
in millijoules since boot, one series per GPU (in dcgm-exporter's default counters).

The text is parsed by prometheus_client (services.engines.prometheus); the exporter
refreshes its values every `collect-interval` (30 s by default, often set to 1 s), so a
window shorter than that interval reads the same value twice: the figure is reported with
the exporter's granularity, never interpolated.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from services.engines.prometheus import Families, SeriesParser
from services.telemetry.energy.records import COUNTER, CounterReading, EnergyUnavailable
from services.telemetry.gpu import DcgmUnreadable, dcgm_metrics_url, fetch_dcgm

ENERGY_FIELD = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


def energy_readings(families: Families, default_host: str) -> list[CounterReading]:
    """One reading per GPU (host and index) that exports the energy counter."""
    readings = []
    for labels, millijoules in families.select(ENERGY_FIELD):
        host = labels.get("hostname") or default_host
        gpu = labels.get("gpu") or labels.get("device") or "0"
        model = labels.get("modelname")
        label = f"{host} GPU {gpu}" + (f": {model}" if model else "")
        readings.append(CounterReading(label, millijoules / 1000.0, COUNTER))
    return sorted(readings, key=lambda r: r.device)


class DcgmEnergySource:
    """The energy of the GPUs one dcgm-exporter reports."""

    def __init__(self, url: str, timeout_s: float = 2.0) -> None:
        self.url = dcgm_metrics_url(url)
        self.host = urlsplit(self.url).hostname or "remote"
        self.name = f"dcgm-exporter at {self.url}"
        self.timeout_s = timeout_s
        self._parser = SeriesParser((ENERGY_FIELD,))

    def open(self) -> None:
        self.read()

    def devices(self) -> tuple[str, ...]:
        return tuple(r.device for r in self.read())

    def read(self) -> list[CounterReading]:
        try:
            families = fetch_dcgm(self.url, self._parser, self.timeout_s)
        except DcgmUnreadable as error:
            raise EnergyUnavailable(str(error)) from None
        readings = energy_readings(families, self.host)
        if not readings:
            raise EnergyUnavailable(
                f"{self.name} does not export {ENERGY_FIELD} (add it to its counters file)"
            )
        return readings

    def close(self) -> None:
        """Nothing held: connections belong to services.core.http's shared client."""
