"""The CPU packages' RAPL energy counters (`/sys/class/powercap/intel-rapl:N/energy_uj`).

Only the top-level zones are read (`intel-rapl:0`, `intel-rapl:1`, one per package; AMD
exposes the same names): their sub-zones (`intel-rapl:0:0`, cores, uncore, DRAM) are parts
of the package's figure. Virtual machines usually expose no powercap tree, and since 2020
kernels make `energy_uj` readable by root only (a side channel, CVE-2020-8694): either way
the result is a reason, never 0 joules.
"""

from __future__ import annotations

import re
from pathlib import Path

from services.telemetry.energy.records import COUNTER, CounterReading, EnergyUnavailable

POWERCAP_ROOT = Path("/sys/class/powercap")
_PACKAGE = re.compile(r"^intel-rapl:\d+$")
MICRO = 1e-6


def _read_int(path: Path) -> int:
    return int(path.read_text(encoding="ascii").strip())


class RaplSource:
    """CPU package energy from RAPL, under `root` (a parameter so tests use a folder of their own)."""

    name = "RAPL (CPU package)"

    def __init__(self, root: Path = POWERCAP_ROOT) -> None:
        self.root = Path(root)
        self._zones: list[tuple[str, Path, float]] | None = None

    def _find(self) -> list[tuple[str, Path, float]]:
        if not self.root.is_dir():
            raise EnergyUnavailable(f"no RAPL counters: {self.root} does not exist (a VM?)")
        zones = sorted(p for p in self.root.iterdir() if _PACKAGE.match(p.name))
        if not zones:
            raise EnergyUnavailable(f"no RAPL counters: {self.root} has no intel-rapl package zone")
        found = []
        for zone in zones:
            try:
                label = (zone / "name").read_text(encoding="ascii").strip() or zone.name
                _read_int(zone / "energy_uj")
                wrap = _read_int(zone / "max_energy_range_uj") * MICRO
            except PermissionError:
                raise EnergyUnavailable(
                    f"the RAPL counter {zone / 'energy_uj'} is readable by root only"
                ) from None
            except (OSError, ValueError) as error:
                raise EnergyUnavailable(f"the RAPL counter in {zone} cannot be read ({error})") from None
            found.append((f"{label} ({zone.name})", zone / "energy_uj", wrap))
        return found

    def open(self) -> None:
        """Find the package zones; raises EnergyUnavailable with the reason there are none."""
        if self._zones is None:
            self._zones = self._find()

    def devices(self) -> tuple[str, ...]:
        self.open()
        return tuple(label for label, _, _ in self._zones or ())

    def read(self) -> list[CounterReading]:
        self.open()
        readings = []
        for label, path, wrap in self._zones or ():
            try:
                value = _read_int(path) * MICRO
            except (OSError, ValueError) as error:
                raise EnergyUnavailable(f"the RAPL counter {path} cannot be read ({error})") from None
            readings.append(CounterReading(label, value, COUNTER, wrap))
        return readings

    def close(self) -> None:
        """Nothing held: each read opens the files."""
