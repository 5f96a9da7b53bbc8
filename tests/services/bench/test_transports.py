"""The registry of load transports (services/bench/runner/transports.py): which transport
carries which placement, looked up by name, each with the one interface."""

from __future__ import annotations

import pytest

from services.bench.load import InProcessTransport, Placement
from services.bench.pool import ProcessTransport
from services.bench.ray_pool import RayTransport, RayUnavailable
from services.bench.runner.transports import TRANSPORTS, transport_for


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


def test_transports_are_registered_by_their_names() -> None:
    assert list(TRANSPORTS) == ["ray", "processes", "process"]
    assert all(transport.name == name for name, transport in TRANSPORTS.items())


def test_a_transport_says_why_it_cannot_run_here() -> None:
    TRANSPORTS["process"].check(Placement())
    TRANSPORTS["processes"].check(Placement(workers=2))
    with pytest.raises(RayUnavailable):  # not installed, or no port: said either way
        TRANSPORTS["ray"].check(Placement(ray_address="no-port"))
