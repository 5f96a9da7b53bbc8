"""`shootout ask PROMPT`: the Playground without a browser. One prompt to several
registered engines at once; each answer with its TTFT, inter-token latency, decode rate and
usage, stored in the run history like an exchange sent from the page (so the Runs page and
`shootout export` see it). `--conversation ID` continues a conversation: each engine gets its
own earlier answers back.

Failed answers end the command normally (exit 0) and show their error class, as a benchmark's
failed requests do; bad input (unknown engine, fewer than two, an empty prompt, an invalid
schema file) is one line on standard error and exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from commands import arguments
from services.core import units
from services.core.errors import ValidationError
from services.core.json_types import JsonOut


def _payload(view: Any) -> JsonOut:
    engines = {}
    for column in view.columns:
        engines[column.engine] = {
            "model": column.model,
            "kind": column.kind,
            "status": column.status,
            "answer": column.answer,
            "ttft_s": column.ttft_s,
            "itl_mean_s": column.itl_mean_s,
            "itl_p90_s": column.itl_p90_s,
            "tokens_per_s": column.tokens_per_s,
            "e2e_s": column.e2e_s,
            "prompt_tokens": column.prompt_tokens,
            "completion_tokens": column.completion_tokens,
            "cached_tokens": column.cached_tokens,
            "ttfat_s": column.ttfat_s,
            "ttft_includes_reasoning": column.ttft_includes_reasoning,
            "reasoning_tokens": column.reasoning_tokens,
            "reasoning_tokens_source": column.reasoning_tokens_source,
            "answer_tokens": column.answer_tokens,
            "reasoning_tok_s": column.reasoning_tok_s,
            "answer_tok_s": column.answer_tok_s,
            "thinking": column.thinking,
            "finish_reason": column.finish_reason,
            "error_class": column.error_class,
            "error": column.error,
            "notes": column.notes,
            "schema_valid": column.schema_check.valid if column.schema_check else None,
            **_engine_split(column),
        }
    return {
        "run_id": view.run_id,
        "conversation_id": view.conversation_id,
        "turn": view.turn,
        "prompt": view.prompt,
        "status": view.status,
        "first_token_engine": view.first_token_engine,
        "fastest_engine": view.fastest_engine,
        "engines": engines,
    }


def _engine_split(column: Any) -> JsonOut:
    """The engine's own times of an answer and the split they give (None: not reported)."""
    # CLI start: dataclasses adds 16 modules (7 ms) to the 90 of `shootout ask --help`.
    from dataclasses import asdict

    split = column.time_split
    return {
        "engine_times": column.engine_times.to_json() if column.engine_times else None,
        "time_split": asdict(split) if split is not None else None,
    }


def _split_line(column: Any) -> str:
    # CLI start: the bench views bring plotly and pandas (about 1 s); only an answer's time split needs
    # them.
    from services.bench.view.split import not_reported, split_words
    from services.engines import get_adapter

    split = column.time_split
    if split is None:
        return f"engine's own times: {not_reported(get_adapter(column.kind).label)}"
    return f"engine's own times: {split_words(split)}"


def _text(view: Any) -> str:
    lines = [
        f"exchange #{view.run_id} (conversation {view.conversation_id}, turn {view.turn}): {view.status}",
        f"first token: {view.first_token_engine or '-'} · fastest decode: {view.fastest_engine or '-'}",
    ]
    # One unit per figure across the engines, as the Playground's panes: they compare at a glance.
    ttft = units.duration_unit(c.ttft_s for c in view.columns)
    itl = units.duration_unit(v for c in view.columns for v in (c.itl_mean_s, c.itl_p90_s))
    for column in view.columns:
        lines += ["", f"== {column.engine} ({column.model or column.kind}): {column.status}"]
        itl_mean, itl_p90 = (
            units.duration(v, itl, missing="-") for v in (column.itl_mean_s, column.itl_p90_s)
        )
        lines.append(
            f"TTFT {units.duration(column.ttft_s, ttft, missing='-')} · ITL mean {itl_mean} / p90 "
            f"{itl_p90} · "
            f"{units.rate(column.tokens_per_s, missing='- tok/s')} · prompt "
            f"{column.prompt_tokens if column.prompt_tokens is not None else '-'}, completion "
            f"{column.completion_tokens if column.completion_tokens is not None else '-'}, cached "
            f"{column.cached_tokens if column.cached_tokens is not None else '-'} · finish "
            f"{column.finish_reason or '-'}"
        )
        if column.ttft_includes_reasoning:
            lines.append(
                f"thinking: first answer token {units.duration(column.ttfat_s, ttft, missing='-')} · "
                f"reasoning {column.reasoning_tokens} tokens ({column.reasoning_tokens_source}) · "
                "answer "
                f"{column.answer_tokens} tokens · "
                f"{units.rate(column.reasoning_tok_s, missing='- tok/s')} "
                f"reasoning, {units.rate(column.answer_tok_s, missing='- tok/s')} answer"
            )
        if column.status == "finished":
            lines.append(_split_line(column))
        if column.error:
            lines.append(f"error ({column.error_class}): {column.error}")
        if column.schema_check is not None:
            check = column.schema_check
            if check.valid is None:
                lines.append(f"schema: not checked: {check.message}")
            else:
                lines.append(
                    "schema: valid"
                    if check.valid
                    else f"schema: invalid at {check.path}: {check.message}"
                )
        lines += [f"note: {note}" for note in column.notes]
        if column.answer:
            lines.append(column.answer)
    return "\n".join(lines)


def handle(args: argparse.Namespace) -> int:
    # CLI start: the playground and the engines bring the database and the HTTP client (0.3 s or more);
    # `shootout ask --help` loads 90 modules and none of them.
    from services import playground
    from services.engines import SamplingParams
    from services.engines.endpoints import list_engines

    names = args.engine or [record.name for record in list_engines()][: playground.MAX_ENGINES]
    schema = None
    if args.schema:
        try:
            schema = playground.parse_schema(Path(args.schema).read_text(encoding="utf-8"))
        except OSError as error:
            raise ValidationError(
                f"Cannot read the schema file {args.schema!r}: {error.strerror}."
            ) from None
    request = playground.SendRequest(
        engines=tuple(playground.EngineChoice(name) for name in names),
        prompt=args.prompt,
        system=args.system,
        params=SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed),
        schema=schema,
        conversation_id=args.conversation,
    )
    sent = playground.send(request)
    try:
        if not playground.wait(sent.run_id, args.timeout):
            playground.stop(sent.run_id)
            playground.wait(sent.run_id, 10)
    except KeyboardInterrupt:
        playground.stop(sent.run_id)
        playground.wait(sent.run_id, 10)
        print(f"interrupted: exchange #{sent.run_id} kept what had arrived", file=sys.stderr)
        return 130
    view = playground.get_exchange(sent.run_id)
    if args.json:
        print(json.dumps(_payload(view), indent=2, sort_keys=True, default=str))
    else:
        print(_text(view))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ask",
        help="one prompt to several engines side by side, measured and stored (the Playground, headless)",
    )
    parser.add_argument("prompt", help="the user message")
    parser.add_argument(
        "--engine",
        action="append",
        metavar="NAME",
        help="a registered engine (repeat, 2 to 6; default: every registered engine, up to 6)",
    )
    parser.add_argument("--system", default="", help="system prompt")
    parser.add_argument(
        "--max-tokens", type=arguments.whole(1, arguments.MAX_TOKENS), default=256, help="default 256"
    )
    parser.add_argument("--temperature", type=arguments.number(0, 2), default=0.7, help="default 0.7")
    parser.add_argument("--seed", type=arguments.seed(), help="sampling seed, for engines that take one")
    parser.add_argument(
        "--schema", metavar="FILE", help="a JSON schema the answers must follow (checked per engine)"
    )
    parser.add_argument(
        "--conversation", metavar="ID", help="continue this conversation (printed by an earlier ask)"
    )
    parser.add_argument(
        "--timeout",
        type=arguments.seconds(),
        default=600.0,
        help="seconds to wait for every answer (default 600)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=handle)
