"""What a reader sees of the markdown a page sent: AppTest hands back the source, where
services.core.safe_text escaped every untrusted character (`llama-b\\: ...`) and put word joiners
where a link would have formed."""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def as_read(markdown: str) -> str:
    """The markdown source as the text it renders to (escapes and word joiners gone)."""
    return _ESCAPE.sub(r"\1", str(markdown)).replace("\u2060", "")
