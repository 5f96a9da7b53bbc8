"""`shootout history`: engine and GPU history from a team's Prometheus, normalised.

  shootout history --prometheus http://prom:9090 --engine vllm-a --since 15m --json
  shootout history --job vllm --selector 'namespace="prod"' --since 2h --signal kv_cache_usage
  shootout history --run 12 --json     # a stored run's window, its registered engines

The URL, selector and token variable default to SHOOTOUT_PROMETHEUS_URL,
SHOOTOUT_PROMETHEUS_SELECTOR and SHOOTOUT_PROMETHEUS_TOKEN_ENV.
"""

from __future__ import annotations

import argparse
import re
import time

from commands import arguments, print_json
from services.core import ids
from services.core.errors import ValidationError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """ "15m", "90s", "2h", "1d" -> seconds."""
    match = _DURATION.match(text or "")
    if match is None or float(match.group(1)) <= 0:
        raise ValidationError(f"{text!r} is not a duration like 90s, 15m, 2h or 1d.")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


def _summary(values: list[float | None]) -> str:
    present = [v for v in values if v is not None]
    if not present:
        return "no data"
    return f"{len(present)} point(s), last {present[-1]:.4g}, max {max(present):.4g}"


def handle(args: argparse.Namespace) -> int:
    # CLI start: prom_history brings the HTTP client, the database and numpy (1 s);
    # `shootout history --help` loads 90 modules.
    from services.telemetry import prom_api, prom_history

    if args.prometheus:
        server = prom_api.PromServer.from_input(
            args.prometheus, args.selector or "", args.token_env, args.timeout
        )
    else:
        configured = prom_api.configured_server()
        if configured is None:
            raise ValidationError("Give --prometheus URL (or set SHOOTOUT_PROMETHEUS_URL).")
        server = prom_api.PromServer(
            configured.url,
            prom_api.parse_selector(args.selector) if args.selector is not None else configured.selector,
            args.token_env or configured.token_env,
            args.timeout,
        )
    engine_names = list(args.engine or [])
    messages: list[str] = []
    if args.run is not None:
        window = prom_history.run_window(args.run)
        start, end = window.start_ts, window.end_ts
        if not engine_names and not args.job:
            engine_names, unknown = prom_history.registered_names(window.engine_names)
            messages += [
                f"engine {name} of run #{args.run} is not registered here: name it with --job"
                for name in unknown
            ]
    else:
        end = time.time()
        start = end - parse_duration(args.since)
    result = prom_history.history(
        server,
        start,
        end,
        step_s=args.step,
        engine_names=engine_names,
        job=args.job,
        signals=args.signal or (),
        gpus=not args.no_gpus,
        rate_window_s=args.rate_window,
    )
    result.messages[:0] = messages
    if args.json:
        print_json(result.to_json())
        return 0
    print(f"Prometheus {server.url} · {result.step_s:g} s step · rate window {result.rate_window_s:g} s")
    for message in result.messages:
        print(f"note: {message}")
    for item in result.series:
        print(f"\n{item.source} ({item.label}{', ' + item.matched_by if item.matched_by else ''})")
        for name in item.signals:
            print(f"  {name:<26} {_summary(item.points(name))}")
        for name, reason in item.not_reported.items():
            print(f"  {name:<26} {reason}")
    if not result.series:
        print("no series in the window")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "history",
        help="engine and GPU history from a Prometheus server, normalised (for a window or a stored run)",
    )
    parser.add_argument(
        "--prometheus", metavar="URL", help="the Prometheus server (default SHOOTOUT_PROMETHEUS_URL)"
    )
    parser.add_argument("--selector", help='label matchers every query carries, e.g. namespace="prod"')
    parser.add_argument(
        "--token-env", metavar="NAME", help="environment variable holding a bearer token"
    )
    who = parser.add_argument_group("engines")
    who.add_argument(
        "--engine", action="append", metavar="NAME", help="a registered engine (repeatable)"
    )
    who.add_argument("--job", metavar="LABEL", help="every instance of this scrape job")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--since", default="15m", help="window ending now: 90s, 15m, 2h, 1d (default 15m)")
    when.add_argument(
        "--run", type=ids.run_number, metavar="N", help="the window of stored run N (and its engines)"
    )
    parser.add_argument(
        "--signal", action="append", metavar="NAME", help="a normalised signal (repeatable; default all)"
    )
    parser.add_argument(
        "--step", type=arguments.seconds(), help="seconds between points (default: about 1000 points)"
    )
    parser.add_argument(
        "--rate-window",
        type=arguments.seconds(),
        default=60.0,
        help="seconds over which rates and percentiles are taken (default 60)",
    )
    parser.add_argument("--no-gpus", action="store_true", help="leave out the dcgm-exporter GPUs")
    parser.add_argument(
        "--timeout",
        type=arguments.seconds(),
        default=10.0,
        help="seconds to wait for each answer (default 10)",
    )
    parser.add_argument("--json", action="store_true", help="print the normalised series as JSON")
    parser.set_defaults(handler=handle)
