"""`shootout engines add|list|probe|edit|remove`: the stored list of endpoints."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from commands import arguments, print_json
from services.core import cost
from services.core.errors import NotFoundError
from services.engines import endpoints, kinds, registration
from services.engines.probe import probe

#: Taken as text: services/core/cost.py explains a "$3.50" or "3,50" better than argparse would.
PRICE_HELP = (
    "price per hour in dollars of the instance or GPUs behind it (e.g. 3.50), for cost per 1M tokens"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("engines", help="register, list and probe engine endpoints")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    add = actions.add_parser("add", help="register an endpoint (probes it to detect its kind)")
    add.add_argument("name")
    add.add_argument("url", help="base URL, e.g. http://gpu-box:8000 (with or without /v1)")
    add.add_argument("--kind", choices=kinds(), help="skip detection and use this kind")
    add.add_argument("--model", help="model name to request (default: the first one the server lists)")
    add.add_argument("--api-key-env", help="NAME of the environment variable holding the API key")
    add.add_argument(
        "--metrics-url", help="metrics URL when not at the base URL (Triton: http://host:8002/metrics)"
    )
    add.add_argument("--usd-per-hour", help=PRICE_HELP)
    add.add_argument("--no-probe", action="store_true", help="store without contacting the server")
    add.add_argument(
        "--same-url",
        action="store_true",
        help="store a second name for a URL another engine already points at (another model there)",
    )
    add.add_argument("--json", action="store_true")
    add.set_defaults(handler=_add)

    listing = actions.add_parser("list", help="list registered endpoints")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_list)

    probe_parser = actions.add_parser("probe", help="probe a registered engine (by name) or any URL")
    probe_parser.add_argument("target", help="engine name or URL")
    probe_parser.add_argument("--timeout", type=arguments.seconds(), default=5.0)
    probe_parser.add_argument("--json", action="store_true")
    probe_parser.set_defaults(handler=_probe)

    edit = actions.add_parser("edit", help="change a registered endpoint")
    edit.add_argument("name")
    edit.add_argument("--rename")
    edit.add_argument("--url")
    edit.add_argument("--kind", choices=kinds())
    edit.add_argument("--model")
    edit.add_argument("--api-key-env")
    edit.add_argument("--metrics-url")
    edit.add_argument("--usd-per-hour", help=PRICE_HELP + "; '' removes the price")
    edit.add_argument("--json", action="store_true")
    edit.set_defaults(handler=_edit)

    remove = actions.add_parser("remove", help="forget an endpoint (stored runs keep their copy)")
    remove.add_argument("name")
    remove.set_defaults(handler=_remove)


def _print_record(record: endpoints.EngineRecord, as_json: bool) -> None:
    if as_json:
        print_json(asdict(record))
    else:
        price = f"{record.usd_per_hour:g} $/h" if record.usd_per_hour is not None else cost.NOT_PRICED
        print(
            f"{record.name}: {record.label} at {record.base_url} (model {record.model or '-'}, {price})"
        )


def _add(args: argparse.Namespace) -> int:
    done = registration.probe_and_register(
        args.name,
        args.url,
        kind=args.kind,
        model=args.model,
        api_key_env=args.api_key_env,
        metrics_url=args.metrics_url,
        probe_first=not args.no_probe,
        allow_twin=args.same_url,
        usd_per_hour=args.usd_per_hour,
    )
    if done.record is None and done.twins:
        # Refused before storing, as the Engines page does: two names for one server count its
        # requests twice in comparisons.
        print(
            f"error: {', '.join(done.twins)} already point(s) at "
            f"{endpoints.normalise_base_url(args.url)}; not stored. Two names for one server count "
            "its requests twice. Use --same-url if a second name is meant.",
            file=sys.stderr,
        )
        return 1
    if done.record is None:
        message = done.probe.message if done.probe is not None else "the server did not answer."
        print(f"error: {message} Use --no-probe to store it anyway.", file=sys.stderr)
        return 1
    if done.twins:
        print(
            f"note: as asked, a second name: {', '.join(done.twins)} point(s) at "
            f"{done.record.base_url} too.",
            file=sys.stderr,
        )
    _print_record(done.record, args.json)
    return 0


def _list(args: argparse.Namespace) -> int:
    records = endpoints.list_engines()
    if args.json:
        print_json([asdict(r) for r in records])
    elif not records:
        print(
            "No engines registered. Add one with `shootout engines add NAME URL` or `shootout local up`."
        )
    else:
        for record in records:
            _print_record(record, False)
    return 0


def _probe(args: argparse.Namespace) -> int:
    api_key_env = None
    target = args.target
    if "://" not in target and ":" not in target:
        try:
            record = endpoints.get_engine(target)
        except NotFoundError:
            record = None
        if record is not None:
            target, api_key_env = record.base_url, record.api_key_env
    result = probe(target, api_key_env=api_key_env, timeout_s=args.timeout)
    if args.json:
        print_json({**result.to_dict(), "ok": result.ok})
    else:
        print(f"{result.state}: {result.message}")
        if result.ok:
            print(
                f"  kind {result.kind_label}, version {result.version or '-'}, models {', '.join(result.models) or '-'}, "
                f"context {result.context_length or '-'}"
            )
    return 0 if result.ok else 1


def _edit(args: argparse.Namespace) -> int:
    changes = {
        key: value
        for key, value in {
            "name": args.rename,
            "base_url": args.url,
            "kind": args.kind,
            "model": args.model,
            "api_key_env": args.api_key_env,
            "metrics_url": args.metrics_url,
            "usd_per_hour": args.usd_per_hour,
        }.items()
        if value is not None
    }
    _print_record(endpoints.update_engine(args.name, **changes), args.json)
    return 0


def _remove(args: argparse.Namespace) -> int:
    endpoints.remove_engine(args.name)
    print(f"removed {args.name}")
    return 0
