"""Names for JSON that is not ours to type, so that an untyped dict never stands for our own records.

- `ForeignJson`: a JSON object someone else wrote and we read by key: an engine's response or
  metrics payload, a peer tool's result file, a viewer's JSON Schema, the OpenAI wire format. Its
  shape is theirs; we read it once, at the edge, into a typed record.
- `JsonOut`: a JSON object we build only to serialise (a `to_json`, a request body). Its values are
  `object`, so nothing can read a field back out of it without narrowing: a reader must use the
  typed record it came from.

Our own data read by key is a dataclass or a `TypedDict`, never either of these.
`benchmarks/code_shape.py` counts each name's uses beside the untyped dicts that are left.
"""

from __future__ import annotations

from typing import Any, TypeAlias

ForeignJson: TypeAlias = dict[str, Any]
JsonOut: TypeAlias = dict[str, object]
