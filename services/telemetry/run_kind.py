"""Monitor recordings as a run kind: the recorder runs inside the app that started it, so a
recording has no worker process, only what "interrupted" says when the app stops."""

from __future__ import annotations

from services.runstate.lifecycle import RunKind
from services.runstate.run_kinds import RunKindSpec, register

SPEC = register(
    RunKindSpec(
        RunKind.RECORDING,
        "recording",
        interrupted="The recording stopped with the app; the samples recorded so far are kept.",
    )
)
