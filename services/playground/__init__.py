"""Playground: one prompt to 2-6 engines at once, streamed and measured live, stored.

A send is one Run (kind "playground") with one Exchange row per engine; the turns of a
multi-turn chat are runs sharing a conversation id, each engine continuing with its own
earlier answers. The streams run in a background thread that owns an event loop (never in
the Streamlit script thread) and use the shared client (`services.client`), so the page and
the benchmarks measure the same way. Partial answers are written to the database every
PERSIST_INTERVAL_S, so a reload or a click never loses what already arrived; the page polls.

The parts: `records` (what goes in and comes out), `checks` and `params` (before a send),
`sending`, `worker` (the streams) and `reading`. `playground.X` stays the one entry point the
page, the CLI and the tests use.
"""

from services.playground.checks import check_answer, parse_schema
from services.playground.params import params_from_dict
from services.playground.reading import conversation, get_exchange, history, request_code
from services.playground.records import (
    EXTRA_KEYS,
    MAX_ENGINES,
    MIN_ENGINES,
    Column,
    EngineChoice,
    ExchangeView,
    HistoryItem,
    SchemaCheck,
    SendHandle,
    SendRequest,
    Turn,
)
from services.playground.sending import exchange_id, reopen, resend, send, stop
from services.playground.text import word_diff
from services.playground.votes import (
    BlindVote,
    PairTally,
    blind_order,
    blind_vote,
    may_undo,
    reveal,
    tally,
    undo_vote,
    vote,
    vote_best,
    votes_for,
)
from services.playground.worker import PERSIST_INTERVAL_S, is_active, running_here, wait

__all__ = [
    "EXTRA_KEYS",
    "MAX_ENGINES",
    "MIN_ENGINES",
    "PERSIST_INTERVAL_S",
    "BlindVote",
    "Column",
    "EngineChoice",
    "ExchangeView",
    "HistoryItem",
    "PairTally",
    "SchemaCheck",
    "SendHandle",
    "SendRequest",
    "Turn",
    "blind_order",
    "blind_vote",
    "check_answer",
    "conversation",
    "exchange_id",
    "get_exchange",
    "history",
    "is_active",
    "may_undo",
    "params_from_dict",
    "parse_schema",
    "reopen",
    "request_code",
    "resend",
    "reveal",
    "running_here",
    "send",
    "stop",
    "tally",
    "undo_vote",
    "vote",
    "vote_best",
    "votes_for",
    "wait",
    "word_diff",
]
