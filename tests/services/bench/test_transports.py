"""The registry of load transports (services/bench/runner/transports.py): which transport
carries which placement, looked up by name, each with the one interface."""

from __future__ import annotations

import pytest

from services.bench.load import InProcessTransport, Placement
from services.bench.pool import ProcessTransport
from services.bench.ray_pool import RayTransport, RayUnavailable
from services.bench.runner.transports import TRANSPORTS, get_transport, transport_for
from services.core.errors import ShootoutError


@pytest.mark.parametrize(
    ("placement", "kind"),
    [
        (Placement(), InProcessTransport),
        (Placement(workers=1), InProcessTransport),
        (Placement(workers=4), ProcessTransport),
        (Placement(workers=1, ray_address="127.0.0.1:6379"), RayTransport),
        (Placement(workers=4, ray_address="127.0.0.1:6379"), RayTransport),
    ],
)
def test_each_placement_has_one_transport(placement: Placement, kind: type) -> None:
    assert isinstance(transport_for(placement), kind)
    assert [t.name for t in TRANSPORTS.values() if t.carries(placement)][-1] == "process"


def test_transports_are_looked_up_by_name() -> None:
    assert list(TRANSPORTS) == ["ray", "processes", "process"]
    assert all(get_transport(name).name == name for name in TRANSPORTS)
    with pytest.raises(ShootoutError, match="No load transport 'carrier pigeon'; known: ray"):
        get_transport("carrier pigeon")


def test_a_transport_says_why_it_cannot_run_here() -> None:
    get_transport("process").check(Placement())
    get_transport("processes").check(Placement(workers=2))
    with pytest.raises(RayUnavailable):  # not installed, or no port: said either way
        get_transport("ray").check(Placement(ray_address="no-port"))
