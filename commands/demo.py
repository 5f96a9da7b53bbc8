"""`shootout demo`: run a guided demo headless and print its measured conclusion.

    shootout demo --list [--json]
    shootout demo NAME [--engines A,B] [--set KEY=VALUE ...] [--json]
    shootout demo --show RUN_ID [--json]

The demo is stored as a run (kind "demo") in the app's database, so it shows on the Demos
and Runs pages and replays there without the engines. Exit status: 0 when every step
measured every engine, 1 when the demo failed or measured with errors (the JSON is still
printed), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from commands import print_json
from services.core import ids
from services.core.errors import ValidationError

if TYPE_CHECKING:
    from services.demos.records import DemoView


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run a guided demo scenario and print its measured conclusion",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("name", nargs="?", help="scenario name (see --list)")
    parser.add_argument(
        "--engines",
        help="registered engine names, comma-separated (default: the scenario's "
        "default engines that are registered)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="settings",
        help="a scenario setting (repeatable; see --list for each scenario's settings)",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and their settings")
    parser.add_argument(
        "--show",
        type=ids.run_number,
        metavar="RUN_ID",
        help="print a stored demo instead of running one",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (format in docs/cli-formats.md)")
    parser.set_defaults(handler=_handle)


def _settings(pairs: list[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValidationError(f"--set takes KEY=VALUE (got {pair!r}).")
        settings[key.strip()] = value.strip()
    return settings


def _handle(args: argparse.Namespace) -> int:
    # CLI start: the demos bring the HTTP client, the database and numpy (1.3 s);
    # `shootout demo --help` loads 90 modules.
    from services.demos import runner, scenarios

    if args.list:
        if args.json:
            print_json([s.describe() for s in scenarios()])
        else:
            for scenario in scenarios():
                print(f"{scenario.name:<20} {scenario.title} ({scenario.duration_hint})")
                print(f"{'':<20} default engines: {', '.join(scenario.default_engines)}")
                for option in scenario.options:
                    print(f"{'':<20} --set {option.key}={option.default}  {option.label}")
        return 0
    if args.show is not None:
        view = runner.demo_view(args.show)
    else:
        if not args.name:
            raise ValidationError("Name a scenario (shootout demo --list shows them).")
        engines = [n for n in (args.engines or "").split(",") if n.strip()] or None
        if not args.json:
            print(f"running demo {args.name}...", file=sys.stderr)
        run_id = runner.start_demo(
            args.name, engines, options=_settings(args.settings), background=False
        )
        view = runner.demo_view(run_id)
    if args.json:
        print_json(runner.demo_json(view))
    else:
        _print_text(view)
    if view.status == "finished":
        return 0
    reason = view.error or "some requests or steps failed (see the steps above)"
    print(f"error: demo #{view.run_id} {view.status}: {reason}", file=sys.stderr)
    return 1


def _print_text(view: DemoView) -> None:
    print(f"Demo #{view.run_id}: {view.title} [{view.status}] on {', '.join(view.engines)}")
    for index, step in enumerate(view.steps, 1):
        print(f"\n{index}. {step.title} ({step.status})")
        for number in step.numbers:
            print(f"   {number.label}: {number.text}")
        if step.finding:
            print(f"   {step.finding}")
        for error in step.errors:
            print(f"   error: {error}")
    if view.conclusion:
        print(f"\nConclusion: {view.conclusion}")
