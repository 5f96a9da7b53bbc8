"""The registry of load transports, by name: the runner asks it which one carries a
placement and never names a transport itself. The first that `carries` a placement is
its transport, so the most particular come first and the one process, which carries any
placement, last."""

from __future__ import annotations

from services.bench.load import InProcessTransport, LoadTransport, Placement
from services.bench.pool import ProcessTransport
from services.bench.ray_pool import RayTransport

TRANSPORTS: dict[str, LoadTransport] = {
    transport.name: transport for transport in (RayTransport(), ProcessTransport(), InProcessTransport())
}


def transport_for(placement: Placement) -> LoadTransport:
    """The transport that carries `placement` (the one process, at least)."""
    return next(transport for transport in TRANSPORTS.values() if transport.carries(placement))
