"""`GET /export/runs/{run_id}.{fmt}`: a run's per-request CSV or run JSON, streamed to the
browser as it is read from the database (services.runs.reports.streamed), as a file download.

The Runs page links here instead of handing Streamlit the whole export: a download button
builds its data in the app's memory (a 500k-request run's JSON was 2.8 GB there).
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from services.core.errors import NotFoundError, ValidationError
from services.runs.reports import streamed as exports

__all__ = ["ROUTES", "export_path"]

PATH = "/export/runs/{run_id}.{fmt}"
#: ASCII digits, and few enough to fit the database's 64-bit ids.
RUN_NUMBER = re.compile(r"[0-9]{1,18}")


def export_path(run_id: int, fmt: str) -> str:
    """The route's address for a run, relative to the app's root (no leading slash), so a
    page at /runs links to /export/runs/12.csv."""
    return PATH.lstrip("/").format(run_id=run_id, fmt=fmt)


def _refusal(status: int, message: str) -> PlainTextResponse:
    return PlainTextResponse(message + "\n", status_code=status)


def export_run(request: Request) -> Response:
    # A plain function: starlette runs it, and pulls each chunk of the stream, on a worker
    # thread, so the database reads never block the event loop that serves every session.
    text, fmt = request.path_params["run_id"], request.path_params["fmt"]
    if not RUN_NUMBER.fullmatch(text):
        return _refusal(404, f"{text!r} is not a run number.")
    if fmt not in exports.STREAM_FORMATS:
        return _refusal(
            400, f"Unknown export format {fmt!r}: use {' or '.join(exports.STREAM_FORMATS)}."
        )
    try:
        stream = exports.stream_run(int(text), fmt)
    except NotFoundError as error:
        return _refusal(404, str(error))
    except ValidationError as error:
        return _refusal(400, str(error))
    return StreamingResponse(
        stream.chunks,
        media_type=f"{stream.mime}; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{stream.filename}"',
            "Cache-Control": "no-store",
        },
    )


ROUTES: list[Route] = [Route(PATH, export_run, methods=["GET"])]
