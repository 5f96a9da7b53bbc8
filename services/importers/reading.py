"""Reading an imported file as a stream (issue 20: a 190 MB import peaked at 4.3 GB, the bytes,
their text and the parsed document all in memory at once).

A file is opened once and read in passes, never whole: a first pass of ijson's tokenizer
checks that it is one well-formed JSON value no deeper than MAX_DEPTH (ijson's own builders
spend memory quadratic in the depth: 20,000 nested brackets took 1 GB), names its top-level
keys and builds the small top-level values; later passes stream the long lists item by item
(`items`). JSON lines are read line by line. Only a file neither can read (CSV, JSON with a
bare NaN or Infinity) is read as text, and only when small.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import ijson

from services.core.errors import ValidationError
from services.core.json_types import ForeignJson
from services.team import limits

__all__ = [
    "MAX_DEPTH",
    "TEXT_LIMIT_BYTES",
    "Scan",
    "Upload",
    "is_blank",
    "items",
    "json_lines",
    "open_upload",
    "scan",
    "text",
]

#: Results files are a few levels deep; our own export is 5.
MAX_DEPTH = 64
#: Files read whole as text (CSV summaries, JSON with bare NaN): AIPerf's CSV is kilobytes.
TEXT_LIMIT_BYTES = 16 * 1024**2
_BOM = b"\xef\xbb\xbf"


@dataclass
class Upload:
    """An imported file: a path, or an upload's bytes; read from `start` (after a BOM)."""

    name: str
    stream: IO[bytes]
    size: int
    path: Path | None = None
    start: int = 0

    def rewind(self) -> IO[bytes]:
        self.stream.seek(self.start)
        return self.stream


@dataclass
class Scan:
    """What one pass of the tokenizer learnt about a file that is one JSON value."""

    kind: str  # "object", "array" or "scalar"; "values" when there are several (JSON lines)
    keys: list[str] = field(default_factory=list)
    #: Top-level values of an object, except those named in `skip` (built as plain values).
    small: ForeignJson = field(default_factory=dict)


@contextmanager
def open_upload(source: Path | bytes | IO[bytes], name: str | None) -> Iterator[Upload]:
    """Open a path or wrap uploaded bytes (or an upload's file object), refusing one larger
    than SHOOTOUT_LIMIT_IMPORT_MB before anything of it is read."""
    if isinstance(source, Path):
        if not source.is_file():
            raise ValidationError(f"{source} does not exist or is not a file.")
        limits.check_import_size(source.stat().st_size, source.name)
        with source.open("rb") as handle:
            yield _prepared(
                Upload(name=name or source.name, stream=handle, size=source.stat().st_size, path=source)
            )
        return
    if not name:
        raise ValidationError("The imported file needs a name.")
    stream: IO[bytes] = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
    size = stream.seek(0, io.SEEK_END)
    limits.check_import_size(size, name)
    yield _prepared(Upload(name=name, stream=stream, size=size))


def _prepared(upload: Upload) -> Upload:
    upload.stream.seek(0)
    head = upload.stream.read(len(_BOM))
    upload.start = len(_BOM) if head == _BOM else 0
    return upload


def is_blank(upload: Upload) -> bool:
    stream = upload.rewind()
    while chunk := stream.read(64 * 1024):
        if chunk.strip():
            return False
    return True


def _check_depth(depth: int, name: str) -> None:
    if depth > MAX_DEPTH:
        raise ValidationError(f"{name} is nested too deeply to be a results file.")


def scan(upload: Upload, skip: frozenset[str] = frozenset()) -> Scan | None:
    """One pass over the file as JSON values; None when it is not JSON that the tokenizer reads
    (CSV, bare NaN or Infinity, broken JSON). Top-level object values not in `skip` are kept."""
    depth, values, kind = 0, 0, "scalar"
    keys: list[str] = []
    small: ForeignJson = {}
    builder: ijson.ObjectBuilder | None = None
    try:
        for event, value in ijson.basic_parse(upload.rewind(), use_float=True, multiple_values=True):
            if event in ("start_map", "start_array"):
                depth += 1
                _check_depth(depth, upload.name)
                if depth == 1:
                    values += 1
                    kind = "object" if event == "start_map" else "array"
            elif event in ("end_map", "end_array"):
                depth -= 1
            elif depth == 0:
                values += 1
            if depth == 1 and event == "map_key":
                if builder is not None:
                    small[keys[-1]] = builder.value
                keys.append(value)
                builder = None if value in skip else ijson.ObjectBuilder()
                continue
            # Every event inside the top-level object's current value (not the object's own
            # opening) goes to that value's builder.
            if builder is not None and depth >= 1 and not (depth == 1 and event == "start_map"):
                builder.event(event, value)
    except ijson.JSONError:
        return None
    except UnicodeDecodeError:
        return None
    if builder is not None and keys:
        small[keys[-1]] = builder.value
    if values == 0:
        return None
    if values > 1:
        return Scan(kind="values")
    return Scan(
        kind=kind, keys=keys if kind == "object" else [], small=small if kind == "object" else {}
    )


def items(upload: Upload, prefix: str) -> Iterator[Any]:
    """The values at `prefix` (ijson's notation: "requests.item"), one at a time. Call after a
    scan passed: the depth is known to be bounded."""
    try:
        yield from ijson.items(upload.rewind(), prefix, use_float=True)
    except ijson.JSONError as error:
        raise ValidationError(
            f"{upload.name}: broken JSON ({str(error).splitlines()[0][:120]})."
        ) from None


def json_lines(upload: Upload) -> list[Any] | None:
    """One JSON value per non-empty line, parsed line by line (Python's json, which reads the
    bare Infinity SGLang writes); None when a line is not one."""
    values = []
    stream = io.TextIOWrapper(upload.rewind(), encoding="utf-8", newline=None)
    try:
        for line in stream:
            if line.strip():
                values.append(json.loads(line))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    except RecursionError:
        raise ValidationError(f"{upload.name} is nested too deeply to be a results file.") from None
    finally:
        stream.detach()
    return values


def text(upload: Upload) -> str:
    """The whole file as text, for the formats that are small (CSV summaries)."""
    if upload.size - upload.start > TEXT_LIMIT_BYTES:
        raise ValidationError(
            f"{upload.name}: not JSON or JSON lines that Shootout can read, and too large "
            f"({upload.size / 1024**2:,.0f} MB) to be a CSV summary."
        )
    try:
        return upload.rewind().read().decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(
            f"{upload.name} is not UTF-8 text; results files are JSON, JSONL or CSV."
        ) from None
