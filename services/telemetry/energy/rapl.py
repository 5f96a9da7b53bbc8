"""The CPU packages' RAPL energy counters (`/sys/class/powercap/intel-rapl:N/energy_uj`).

Only the top-level zones are read (`intel-rapl:0`, `intel-rapl:1`, one per package; AMD
exposes the same names): their sub-zones (`intel-rapl:0:0`, cores, uncore, DRAM) are parts
of the package's figure. Virtual machines usually expose no powercap tree, and since 2020
kernels make `energy_uj` readable by root only (a side channel, CVE-2020-8694): either way
the result is a reason, never 0 joules.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from services.telemetry.energy.maths import joules_between
from services.telemetry.energy.records import COUNTER, CounterReading, EnergyUnavailable

POWERCAP_ROOT = Path("/sys/class/powercap")
_PACKAGE = re.compile(r"^intel-rapl:\d+$")
MICRO = 1e-6
#: More than any CPU package draws: the counters are read before they can wrap at this power.
MAX_WATTS = 2000.0


def _read_int(path: Path) -> int:
    return int(path.read_text(encoding="ascii").strip())


class RaplSource:
    """CPU package energy from RAPL, under `root` (a parameter so tests use a folder of their own).

    Each package's counter wraps at its `max_energy_range_uj`: 262 kJ on most Intel parts
    (minutes at full power), 4.3 kJ on some (seconds). A thread reads the counters more often
    than the fastest can wrap at 2 kW and adds the steps up, so `read()` answers the joules
    since `open()`, which never wrap, however long the step."""

    name = "RAPL (CPU package)"

    def __init__(self, root: Path = POWERCAP_ROOT, poll_s: float | None = None) -> None:
        self.root = Path(root)
        self._poll_s = poll_s
        self._zones: list[tuple[str, Path, float]] | None = None
        self._last: dict[str, float] = {}
        self._total: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

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
        """Find the package zones and start counting; raises EnergyUnavailable with the
        reason there are none."""
        if self._zones is not None:
            return
        self._zones = self._find()
        self._poll()
        fastest = min(wrap for _, _, wrap in self._zones)
        interval = self._poll_s or max(0.5, min(5.0, fastest / MAX_WATTS / 2))
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(interval,), name="rapl", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        """Read each counter once and add its step since the last read (one wrap at most)."""
        with self._lock:
            for label, path, wrap in self._zones or ():
                try:
                    value = _read_int(path) * MICRO
                except (OSError, ValueError) as error:
                    raise EnergyUnavailable(
                        f"the RAPL counter {path} cannot be read ({error})"
                    ) from None
                last = self._last.get(label)
                self._last[label] = value
                step = 0.0 if last is None else joules_between(last, value, wrap)
                self._total[label] = self._total.get(label, 0.0) + (step or 0.0)

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self._poll()
            except EnergyUnavailable:
                continue  # the read at the window's end says it

    def devices(self) -> tuple[str, ...]:
        self.open()
        return tuple(label for label, _, _ in self._zones or ())

    def read(self) -> list[CounterReading]:
        """Joules per package since open(): a counter that does not wrap."""
        self.open()
        self._poll()
        with self._lock:
            return [
                CounterReading(label, self._total[label], COUNTER) for label, _, _ in self._zones or ()
            ]

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        self._zones = None
        self._last.clear()
        self._total.clear()
