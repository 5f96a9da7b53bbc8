"""The join link as a QR code for a projector: SVG, drawn here (segno), no image service."""

from __future__ import annotations

import io

import segno


def qr_svg(link: str) -> str:
    """An SVG document (with its namespace, so a browser draws it as an image)."""
    out = io.BytesIO()
    # Error correction M survives a glare spot on a projected code; scale 6 keeps it sharp at 200 px.
    segno.make(link, error="m").save(
        out, kind="svg", xmldecl=False, svgns=True, scale=6, dark="#1f2328", light="#ffffff"
    )
    return out.getvalue().decode()
