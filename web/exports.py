"""`GET /export/runs/{run_id}.{fmt}`: a run's per-request CSV or run JSON, streamed to the
browser as it is read from the database (services.runs.reports.streamed), or its HTML report
or steps CSV (services.runs.reports), as a file download.

The Runs page links here instead of handing Streamlit the whole export: a download button
builds its data in the app's memory (a 500k-request run's JSON was 2.8 GB there). The Demos
page links here for the demo's HTML report: the demos feature sits below the runs' reports.
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from services.core.errors import NotFoundError, ValidationError
from services.runs import reports
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
    try:
        if fmt in exports.STREAM_FORMATS:
            stream = exports.stream_run(int(text), fmt)
            filename, mime, chunks = stream.filename, stream.mime, stream.chunks
        else:
            # The HTML report and the steps CSV are summaries, small at any run size: built whole.
            exported = reports.export_run(int(text), fmt)
            filename, mime, chunks = exported.filename, exported.mime, iter([exported.data])
    except NotFoundError as error:
        return _refusal(404, str(error))
    except ValidationError as error:
        return _refusal(400, str(error))
    return StreamingResponse(
        chunks,
        media_type=f"{mime}; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Cache-Control": "no-store",
        },
    )


ROUTES: list[Route] = [Route(PATH, export_run, methods=["GET"])]
