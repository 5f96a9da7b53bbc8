"""RAPL over a powercap tree built in a temporary folder, wrap-around included."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from services.telemetry.energy.rapl import RaplSource
from services.telemetry.energy.records import EnergyUnavailable

RANGE_UJ = 262_143_328_850


def zone(root: Path, name: str, label: str, energy_uj: int, range_uj: int = RANGE_UJ) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "name").write_text(f"{label}\n")
    (folder / "energy_uj").write_text(f"{energy_uj}\n")
    (folder / "max_energy_range_uj").write_text(f"{range_uj}\n")
    return folder


def test_packages_count_joules_from_when_they_were_opened(tmp_path: Path) -> None:
    first = zone(tmp_path, "intel-rapl:0", "package-0", 1_500_000)
    zone(tmp_path, "intel-rapl:1", "package-1", 2_000_000)
    zone(tmp_path, "intel-rapl:0:0", "core", 999)  # a part of package 0: never added again
    zone(tmp_path, "intel-rapl-mmio:0", "package-0", 5)  # the same package seen another way
    source = RaplSource(tmp_path, poll_s=3600)
    assert source.devices() == ("package-0 (intel-rapl:0)", "package-1 (intel-rapl:1)")
    assert [r.joules for r in source.read()] == [0.0, 0.0]
    (first / "energy_uj").write_text("4000000\n")
    assert [r.joules for r in source.read()] == [2.5, 0.0]
    source.close()


def test_a_counter_that_wraps_between_two_reads(tmp_path: Path) -> None:
    package = zone(tmp_path, "intel-rapl:0", "package-0", RANGE_UJ - 3_000_000)
    source = RaplSource(tmp_path, poll_s=3600)
    (start,) = source.read()
    (package / "energy_uj").write_text("7000000\n")
    (end,) = source.read()
    assert end.joules - start.joules == pytest.approx(10.0)
    source.close()


def test_the_background_reads_catch_every_wrap_of_a_long_step(tmp_path: Path) -> None:
    # A 4.3 kJ counter (2**32 uJ) wraps in seconds at full power: twice between two reads here.
    small = 2**32
    package = zone(tmp_path, "intel-rapl:0", "package-0", 0, range_uj=small)
    source = RaplSource(tmp_path, poll_s=0.01)
    (start,) = source.read()
    for value in (small - 1_000_000, 1_000_000, small - 1_000_000, 2_000_000):
        (package / "energy_uj").write_text(f"{value}\n")
        time.sleep(0.1)  # ten background reads
    (end,) = source.read()
    assert end.joules - start.joules == pytest.approx((2 * small + 2_000_000) * 1e-6)
    source.close()


def test_no_tree_or_no_package_is_a_reason(tmp_path: Path) -> None:
    with pytest.raises(EnergyUnavailable, match="does not exist"):
        RaplSource(tmp_path / "absent").open()
    (tmp_path / "intel-rapl").mkdir()  # the control type folder alone, as some VMs show
    with pytest.raises(EnergyUnavailable, match="no intel-rapl package zone"):
        RaplSource(tmp_path).open()


def test_a_counter_readable_by_root_only_is_a_reason(tmp_path: Path) -> None:
    package = zone(tmp_path, "intel-rapl:0", "package-0", 1)
    (package / "energy_uj").chmod(0o000)
    if os.geteuid() == 0:  # root reads it anyway: stand in for the kernel's refusal
        (package / "energy_uj").unlink()
        (package / "energy_uj").mkdir()
        with pytest.raises(EnergyUnavailable, match="cannot be read"):
            RaplSource(tmp_path).open()
        return
    with pytest.raises(EnergyUnavailable, match="readable by root only"):
        RaplSource(tmp_path).open()
