"""What the Playground page shows, as plain values: its form's fields turned into a SendRequest
and back (a reopened exchange refills the form), the order and labels of the answer columns in
blind mode, the figures of each pane, and the blind-vote tally as a table.

The form is a mapping of the page's widget keys (``pg_*``) to their values, so the page hands
over its session state as it is and writes back what ``form_values`` returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from services import local_engines, playground
from services.client import ERROR_CLASSES
from services.core.errors import ShootoutError
from services.core.json_types import JsonOut
from services.core.units import MISSING, TimeUnit, count, duration, duration_unit, rate
from services.engines import SamplingParams, endpoints, get_adapter
from services.engines.endpoints import EngineRecord, list_engines
from services.playground import (
    Column,
    EngineChoice,
    ExchangeView,
    SendRequest,
    Turn,
    conversation,
    exchange_id,
    get_exchange,
    history,
    live_tally,
    may_undo,
    request_code,
    resend,
    reveal,
    send,
    stop,
    undo_vote,
    vote_best,
)
from services.playground import text as ptext
from services.playground import votes as playground_votes
from services.playground.arrivals import Arrival, WaitingRoom, waiting_room
from services.playground.params import blind_notes
from services.playground.pool import prepare
from services.playground.text import (
    code_span,
    diff_html,
    md_line,
    md_text,
    params_summary,
    safe_answer,
    side_by_side_html,
)
from services.playground.votes import BlindVote
from services.playground.watching import Growing, growing
from services.runstate import blind
from services.team.owners import may_control_run

#: What the page reads: this module's own, and what it passes on from the feature's others.
__all__ = [
    "DEFAULT_SCHEMA",
    "HIDDEN_ENGINES",
    "REASONING_COUNTED_BY",
    "STATUS_WORDS",
    "VOTER_WORDS",
    "Arrangement",
    "Arrival",
    "Column",
    "EngineRecord",
    "ExchangeView",
    "Growing",
    "Reopened",
    "WaitingRoom",
    "arrange",
    "code_span",
    "conversation",
    "diff_html",
    "engine_split",
    "exchange_id",
    "figures",
    "form_request",
    "form_values",
    "get_exchange",
    "growing",
    "history",
    "keep_worker_warm",
    "list_engines",
    "live_tally_line",
    "may_control_run",
    "may_undo",
    "md_line",
    "md_text",
    "params_summary",
    "reopen_form",
    "request_code",
    "resend",
    "reveal",
    "safe_answer",
    "sampling_params",
    "send",
    "side_by_side_html",
    "stop",
    "tally_rows",
    "thinking_title",
    "token_counts",
    "turn_answers",
    "undo_vote",
    "units",
    "vote_best",
    "wait_stopped",
    "waiting_room",
]

DEFAULT_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    },
    indent=2,
)
#: What a list says in place of a hidden exchange's engines (the Runs list's words).
HIDDEN_ENGINES = blind.HIDDEN_NOTE
#: How a column's status reads under its title (Streamlit's colour markup).
STATUS_WORDS = {
    "streaming": ":blue[streaming…]",
    "finished": ":green[finished]",
    "failed": ":red[failed]",
    "cancelled": ":orange[stopped]",
    "interrupted": ":orange[interrupted]",
}


def keep_worker_warm() -> None:
    """Have the worker process that streams the next send started already (a send then costs
    no process start: services/playground/pool.py)."""
    prepare()


#: How long the Stop button's click waits for the streams to end, so the page it draws next says
#: "stopped" (a worker hears a stop at once: services/playground/pool.py).
STOP_WAIT_S = 0.3


def wait_stopped(run_id: int) -> None:
    """Give a stopped exchange's worker a moment to store its last rows."""
    playground.wait(run_id, STOP_WAIT_S)


def _optional_int(form: Mapping[str, Any], key: str) -> int | None:
    value = form.get(key)
    return None if value in (None, 0) else int(value)


def _extra_body(form: Mapping[str, Any], engine: str) -> JsonOut | None:
    text = (form.get(f"pg_extra_{engine}") or "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ShootoutError(f"extra_body of {engine} is not JSON: {error.msg}.") from None
    if not isinstance(value, dict):
        raise ShootoutError(f"extra_body of {engine} must be a JSON object.")
    return value


def sampling_params(form: Mapping[str, Any]) -> SamplingParams:
    """The sampling parameters the form's fields say (an empty field: the engine's default)."""
    parts = (part.strip() for part in (form.get("pg_stop_text") or "").split(","))
    return SamplingParams(
        temperature=form.get("pg_temperature"),
        top_p=form.get("pg_top_p"),
        max_tokens=_optional_int(form, "pg_max_tokens"),
        seed=form.get("pg_seed"),
        stop=tuple(s for s in parts if s),
        n=int(form.get("pg_n") or 1),
        top_k=_optional_int(form, "pg_top_k"),
        min_tokens=_optional_int(form, "pg_min_tokens"),
        ignore_eos=bool(form.get("pg_ignore_eos")),
    )


def form_request(form: Mapping[str, Any], conversation_id: str | None) -> SendRequest:
    """The request the form describes; ShootoutError names a field that does not parse."""
    schema = playground.parse_schema(form.get("pg_schema") or "") if form.get("pg_schema_on") else None
    engines = tuple(
        EngineChoice(name, (form.get(f"pg_model_{name}") or "").strip() or None, _extra_body(form, name))
        for name in form.get("pg_engines") or []
    )
    return SendRequest(
        engines=engines,
        prompt=form.get("pg_prompt") or "",
        system=form.get("pg_system") or "",
        params=sampling_params(form),
        schema=schema,
        conversation_id=conversation_id,
        blind=bool(form.get("pg_blind")),
    )


def form_values(request: SendRequest) -> JsonOut:
    """The form's fields for `request` (the inverse of form_request), for the page's state."""
    p = request.params
    values: JsonOut = {
        "pg_engines": [c.engine for c in request.engines],
        "pg_prompt": request.prompt,
        "pg_system": request.system,
        "pg_temperature": p.temperature,
        "pg_top_p": p.top_p,
        "pg_max_tokens": p.max_tokens,
        "pg_seed": p.seed,
        "pg_stop_text": ", ".join(p.stop),
        "pg_n": p.n,
        "pg_top_k": p.top_k,
        "pg_min_tokens": p.min_tokens,
        "pg_ignore_eos": p.ignore_eos,
        "pg_schema_on": request.schema is not None,
        "pg_blind": request.blind,
    }
    if request.schema is not None:
        values["pg_schema"] = json.dumps(request.schema, indent=2)
    for choice in request.engines:
        values[f"pg_model_{choice.engine}"] = choice.model or ""
        values[f"pg_extra_{choice.engine}"] = json.dumps(choice.extra_body) if choice.extra_body else ""
    return values


@dataclass(frozen=True)
class Reopened:
    """A stored exchange put back on screen: its settings for the form, its conversation."""

    form: JsonOut
    conversation_id: str | None


def reopen_form(run_id: int, participant: str | None = None) -> Reopened:
    """The form for continuing `run_id`: its settings, an empty prompt, and only the engines
    still registered (a removed one cannot be asked again). A blind exchange still hidden from
    `participant` leaves the engine picker (and its per-engine fields) as this viewer had it:
    which engines took part narrows down who wrote what (issue 56)."""
    view = playground.get_exchange(run_id)
    request = playground.reopen(run_id)
    hidden = view.blind and playground_votes.engines_hidden(run_id, participant)
    known = {e.name for e in endpoints.list_engines()}
    kept = SendRequest(
        engines=() if hidden else tuple(c for c in request.engines if c.engine in known),
        prompt="",
        system=request.system,
        params=request.params,
        schema=request.schema,
        blind=request.blind,
    )
    form = form_values(kept)
    if hidden:
        del form["pg_engines"]
    return Reopened(form, view.conversation_id)


@dataclass(frozen=True)
class Arrangement:
    """The answer columns as the screen shows them."""

    columns: list[Column]  # in screen order (shuffled per exchange when sent blind)
    labels: dict[str, str]  # engine -> "Answer X"
    hidden: bool  # names and timings hidden: a blind exchange before its vote or reveal
    vote: BlindVote | None


def arrange(view: ExchangeView, participant: str | None = None) -> Arrangement:
    """Blindness comes from the stored exchange, never from a viewer's toggle: a blind
    exchange's address shows it blind to every participant until they vote or an operator
    reveals it (None: a reader who is no participant, who waits for the reveal). While hidden
    the columns carry nothing that says their engine (`blinded`)."""
    cast = playground.blind_vote(view.run_id, participant) if view.blind else None
    engines = [c.engine for c in view.columns]
    order = playground.blind_order(view.run_id, engines) if view.blind else engines
    columns = sorted(view.columns, key=lambda c: order.index(c.engine))
    labels = playground_votes.answer_labels(order)
    shown_hidden = playground_votes.engines_hidden(view.run_id, participant) if view.blind else False
    if shown_hidden:
        pooled = pooled_notes(columns)
        columns = [replace(blinded(column, labels[column.engine]), notes=pooled) for column in columns]
    return Arrangement(columns, labels, shown_hidden, cast)


def pooled_notes(columns: list[Column]) -> list[str]:
    """A hidden exchange's notes, the same under every answer: "Answer B's engine does not
    take top_k" names no engine, yet says which answer Triton wrote to a voter who knows
    which kind lacks top_k. Pooled, they say what was not sent, never to which answer."""
    pooled: list[str] = []
    for column in columns:
        for note in blind_notes(column.notes, _POOLED):
            text = "An engine in this exchange" + note[len(_POOLED) + len("'s engine") :]
            if text not in pooled:
                pooled.append(text)
    return sorted(pooled)


_POOLED = "\x00"


def blinded(column: Column, label: str) -> Column:
    """A hidden answer as every screen gets it (issue 56): its text, status, thinking and
    schema check, its notes said of "Answer B's engine" and its error by its class only (an
    engine's message may quote its name or address); no model, kind, timing or token count.
    `engine` stays: it is the page's key for the column, never drawn while hidden."""
    failed = ERROR_CLASSES.get(column.error_class or "", ERROR_CLASSES["error"])
    return Column(
        engine=column.engine,
        model=None,
        kind="",
        status=column.status,
        answer=column.answer,
        choices=list(column.choices),
        thinking=column.thinking,
        error_class=column.error_class,
        error=f"Failed: {failed}." if column.error else None,
        notes=blind_notes(column.notes, label),
        schema_check=column.schema_check,
    )


def turn_answers(turn: Turn, participant: str | None = None) -> list[tuple[str, str]]:
    """An earlier turn's (who, answer) pairs: "Answer X" while that turn is still hidden."""
    arrangement = arrange(playground.get_exchange(turn.run_id), participant)
    if not arrangement.hidden:
        return list(turn.answers.items())
    return [(arrangement.labels[c.engine], turn.answers.get(c.engine, "")) for c in arrangement.columns]


def tally_rows() -> list[dict[str, object]]:
    """The blind votes per engine pair, one row each (empty when nobody voted)."""
    return [
        {
            "engine A": t.engine_a,
            "engine B": t.engine_b,
            "A wins": t.wins_a,
            "B wins": t.wins_b,
            "ties": t.ties,
        }
        for t in playground.tally()
    ]


def live_tally_line(run_id: int, session_id: int | None = None) -> str | None:
    """The exchange's votes so far in one line (blind labels while hidden), None before any:
    what an operator presenting, or a participant who voted, sees under the vote. With
    `session_id`, the votes cast in that team session only, as its report counts them (a
    presenter's tally that counted earlier votes said "2 participants" over a report saying
    "No votes in this session")."""
    found = live_tally.exchange_tally(run_id, session_id)
    if not found.voters:
        return None
    parts = [
        f"{ptext.md_line(a.label if a.engine is None else f'{a.engine} ({a.label})')}: {a.votes}"
        for a in found.answers
    ]
    parts.append(f"no clear winner: {found.no_winner}")
    who = "participant" if found.voters == 1 else "participants"
    return f"Votes so far, {found.voters} {who}: " + " · ".join(parts) + address_words(found)


def address_words(found: live_tally.ExchangeTally) -> str:
    """How many of the votes came from each client address (a room behind one NAT is one
    address: many votes from one address are a room, or one person with many logins)."""
    if not found.per_address and not found.no_address:
        return ""
    counts = ", ".join(str(n) for n in found.per_address)
    places = len(found.per_address)
    votes = "vote" if sum(found.per_address) == 1 else "votes"
    words = f" · from {places} address{'es' if places != 1 else ''} ({counts} {votes})" if places else ""
    if found.no_address:
        words += f" · {found.no_address} with no address stored"
    return words


#: What counts as a voter, said where the room votes (docs/team-server.md#blind-votes).
VOTER_WORDS = (
    "One vote per person and exchange: a person is their OIDC login (one voter whatever the "
    "browser), else their password login session, else their browser. The tally says how many "
    "votes came from each network address."
)


def units(columns: list[Column]) -> tuple[TimeUnit, TimeUnit]:
    """One unit for TTFT and one for ITL across the columns (and turn 1), so they compare at a
    glance."""
    return (
        duration_unit([v for c in columns for v in (c.ttft_s, c.first_turn_ttft_s)]),
        duration_unit([v for c in columns for v in (c.itl_mean_s, c.itl_p90_s)]),
    )


#: Joins a number to its unit and a label to its value, so a narrow pane wraps only between
#: figures, never inside one ("0.02" on one line and "s" on the next).
_KEEP = "\u00a0"


def _kept(text: str) -> str:
    return text.replace(" ", _KEEP)


def figures(column: Column, units: tuple[TimeUnit, TimeUnit]) -> str:
    """A pane's timings as two markdown lines, figures separated by " · ". Six panes share
    1400 px: a table of three columns wrapped its headings and its values mid-figure there."""
    ttft, itl = units
    answer = (
        f"first{_KEEP}answer{_KEEP}**{_kept(duration(column.ttfat_s, ttft))}** · "
        if column.ttft_includes_reasoning
        else ""
    )
    first = (
        f"TTFT{_KEEP}**{_kept(duration(column.ttft_s, ttft))}** · {answer}"
        f"{_kept(rate(column.tokens_per_s, 'tokens/s', missing=f'{MISSING} tokens/s'))}"
    )
    second = (
        f"ITL{_KEEP}mean{_KEEP}{_kept(duration(column.itl_mean_s, itl))} · "
        f"p90{_KEEP}{_kept(duration(column.itl_p90_s, itl))}"
    )
    return f"{first}  \n{second}"


#: Who counted a reasoning model's thinking tokens, in a pane's words.
REASONING_COUNTED_BY = {"usage": "by the engine", "stream": "from the stream"}


def thinking_title(column: Column) -> str | None:
    """The title of the collapsed thinking above the answer: its tokens, who counted them and
    their rate, the answer's after it; None when the engine streamed no thinking."""
    if not column.thinking:
        return None
    counted = REASONING_COUNTED_BY.get(column.reasoning_tokens_source or "", "")
    parts = [f"Thinking: {count(column.reasoning_tokens)} tokens {counted}".rstrip()]
    if column.reasoning_tok_s is not None:
        parts.append(rate(column.reasoning_tok_s, "tokens/s"))
    if column.answer_tokens is not None:
        answer_rate = (
            f" at {rate(column.answer_tok_s, 'tokens/s')}" if column.answer_tok_s is not None else ""
        )
        parts.append(f"answer {count(column.answer_tokens)} tokens{answer_rate}")
    return ptext.md_line(" · ".join(parts))


def engine_split(column: Column, units: tuple[TimeUnit, TimeUnit]) -> str | None:
    """The engine's own prefill and decode beside the client's TTFT and ITL, and the rest
    outside its clock, in one markdown line; "not reported by <engine>" when it timed nothing;
    None while the answer streams (the engine says its times at the end)."""
    if column.status != "finished":
        return None
    split = column.time_split
    if split is None:
        return f"Engine's own times: not reported by {ptext.md_line(get_adapter(column.kind).label)}"
    ttft, itl = units
    parts = []
    if split.queue_s is not None:
        parts.append(f"queue {duration(split.queue_s, ttft)}")
    if split.prefill_s is not None:
        parts.append(f"prefill {duration(split.prefill_s, ttft)}")
    if split.decode_s is not None:
        tokens = column.completion_tokens
        per_token = (
            f" ({duration(split.decode_s / (tokens - 1), itl)}/token)" if tokens and tokens > 1 else ""
        )
        parts.append(f"decode {duration(split.decode_s)}{per_token}")
    elif split.engine_s is not None:
        parts.append(f"prefill + decode {duration(split.engine_s - (split.queue_s or 0.0))}")
    rests = [
        f"{name} {duration(value, ttft)}"
        for name, value in (("of TTFT", split.ttft_rest_s), ("of E2E", split.e2e_rest_s))
        if value is not None
    ]
    if rests:
        parts.append("rest " + ", ".join(rests))
    note = f" · {ptext.md_line(split.clamp_note)}" if split.clamp_note else ""
    # Behind a router the times are its worker's; the router's own time is in the rest.
    whose = (
        "Its worker's own (the router's time is in the rest): "
        if split.via == "router"
        else "Engine's own: "
    )
    return whose + " · ".join(_kept(part) for part in parts) + note


#: A stopped column's status: its stream ended before the last chunk, which carries every
#: engine's counts (issue 56: a stopped llama.cpp or vLLM pane read "cached not reported").
STOPPED = "cancelled"


def token_counts(column: Column) -> str:
    """The pane's token counts and finish reason in one markdown line, each kept whole."""
    if column.cached_tokens is not None:
        cached = count(column.cached_tokens)
    elif column.status == STOPPED:
        cached = f"{MISSING} (stopped before the count)"
    else:
        cached = "not reported"
    finish = ptext.md_line(column.finish_reason) if column.finish_reason else MISSING
    return " · ".join(
        _kept(part)
        for part in (
            f"prompt {count(column.prompt_tokens)}",
            f"completion {count(column.completion_tokens)}",
            f"cached {cached}",
            f"finish {finish}",
        )
    )


#: Where each kind's cached-token count comes from and when it is 0 (issue 47: "24 on turn 1,
#: vLLM 0 on turn 2" went unexplained). The count is always the engine's own: Shootout reads it,
#: never works it out.
_CACHED_SOURCES = {
    "vllm": (
        "vLLM's own counter (usage.prompt_tokens_details.cached_tokens, only with "
        "--enable-prompt-tokens-details). Automatic prefix caching reuses whole KV blocks only "
        "(128 tokens each on the local CPU vLLM, 16 by default on a GPU): a prompt shorter than "
        "one block, or the tail past its last whole block, is never cached, so a short "
        "conversation shows 0 on turn 2 too."
    ),
    "sglang": (
        "SGLang's own counter (usage.prompt_tokens_details.cached_tokens, with "
        "--enable-cache-report). RadixAttention reuses any shared prefix token by token: 0 when "
        "the prefix was evicted or the server runs without a radix cache."
    ),
    "llamacpp": (
        "llama.cpp's own counter (timings.cache_n, also in usage): a slot reuses the longest "
        "start its previous prompt shares with this one, so turn 1 can already count the chat "
        "template's tokens. 0 when the request lands on another slot or the prompt cache is off "
        "(--no-cache-prompt)."
    ),
    "router": (
        "The worker engine's own counter, passed on by the router: cache-aware routing sends a "
        "conversation back to the worker that holds its prefix, else the count is 0."
    ),
}


def cached_tokens_help(kind: str, cached: int | None, status: str | None = None) -> str:
    """Where the pane's "cached" count comes from and why it can be 0 (the counts line's help)."""
    if cached is None and status == STOPPED:
        return (
            "Stopped before the engine's last chunk, which carries its cached-token count "
            "(usage.prompt_tokens_details.cached_tokens or llama.cpp's timings.cache_n): this "
            "answer has none. A finished answer shows it."
        )
    if cached is None:
        return (
            "Not reported: this engine's answer carries no cached-token count "
            "(usage.prompt_tokens_details.cached_tokens or llama.cpp's timings.cache_n)."
        )
    return _CACHED_SOURCES.get(
        kind,
        "The engine's own counter (usage.prompt_tokens_details.cached_tokens), as it reports "
        "it: prompt tokens it served from its prefix cache instead of computing them. Engines "
        "that cache whole blocks report 0 until a shared prefix fills one.",
    )


def cached_zero_why(kind: str) -> str:
    """A short reason for a 0 on a later turn, for the turn-vs-turn-1 line."""
    if kind == "vllm":
        return "vLLM caches whole 128-token blocks (on CPU): a shorter history is never cached"
    if kind == "llamacpp":
        return "llama.cpp reuses a slot's previous prompt: this turn went to another slot"
    return "the engine cached nothing of this prompt (its own counter)"


def shared_cores_note(engine_names: list[str]) -> str | None:
    """The Playground's note when local engines are compared: its columns answer at the same
    time on this machine's cores, beside whatever other local engines run (issue 47)."""
    local_ids = {engine.name: engine.local_id for engine in list_engines()}
    return local_engines.shared_cores_note((local_ids.get(n) for n in engine_names), together=True)


def default_engines(room: WaitingRoom | None = None) -> list[str]:
    """The engines the form starts with: the pick every comparing page starts with (issue 47),
    three of it here (the first two are the Benchmarks and Parity pair), in the registry's
    order as the columns always were. Given the waiting room, only local engines that answer
    are picked (issue 58: a vLLM still compiling is not the first pair's)."""
    engines = list_engines()
    live = None
    if room is not None:
        by_name = {e.name: e.local_id for e in engines}
        live = [local for name in room.ready if (local := by_name.get(name)) is not None]
    picks = endpoints.default_picks(engines, 3, live=live)
    return [e.name for e in engines if e.name in picks]
