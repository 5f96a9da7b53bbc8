"""`shootout local install|up|down|status`: the real engines on this machine."""

from __future__ import annotations

import argparse
import sys
import threading

from commands import print_json
from services import local_engines
from services.engines import endpoints
from services.local_engines import background


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "local", help="install, start, stop the local engines (llama.cpp, vLLM, SGLang, Triton, router)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ids_help = f"engine ids (default: all of {', '.join(s.id for s in local_engines.specs())})"

    install = actions.add_parser(
        "install", help="install the engines and the model (compiles llama.cpp once)"
    )
    install.add_argument(
        "backends",
        nargs="*",
        metavar="BACKEND",
        help=f"{', '.join(local_engines.backend_names())} (default: SHOOTOUT_LOCAL_ENGINES, else all)",
    )
    install.set_defaults(handler=_install)

    plan = actions.add_parser(
        "plan",
        help="say what `up` would install (GB, minutes on this machine) and whether the disk holds it",
    )
    plan.set_defaults(handler=_plan)

    up = actions.add_parser("up", help="install when missing, start, register and wait until healthy")
    up.add_argument("ids", nargs="*", help=ids_help)
    up.add_argument(
        "--background",
        action="store_true",
        help="do it in a detached process (lines in <engines dir>/run/up.log); print that log's path",
    )
    up.add_argument(
        "--no-install", action="store_true", help="fail instead of installing what is missing"
    )
    up.add_argument("--json", action="store_true")
    up.set_defaults(handler=_up)

    down = actions.add_parser("down", help="stop the local engines and any install still going")
    down.add_argument("ids", nargs="*", help=ids_help)
    down.add_argument("--json", action="store_true")
    down.set_defaults(handler=_down)

    status = actions.add_parser(
        "status", help="show each local engine's install or PID, port, health and log"
    )
    status.add_argument("ids", nargs="*", help=ids_help)
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=_status)


_said = threading.Lock()


def _log(line: str) -> None:
    # Whole lines: the installs beside each other say theirs from two threads.
    with _said:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _show(statuses: list[local_engines.LocalEngineStatus], as_json: bool) -> None:
    if as_json:
        print_json(local_engines.as_dicts(statuses))
        return
    for s in statuses:
        pid = f"pid {s.pid}" if s.pid else "-"
        print(f"{s.id:16} {s.status:13} {s.url:24} {pid:10} {s.message}")


def _install(args: argparse.Namespace) -> int:
    local_engines.install(args.backends or None, log=_log)
    return 0


def _plan(args: argparse.Namespace) -> int:
    """Exit 0 when the chosen engines fit the free disk, 5 when they do not (run.sh then serves
    the app without installing them)."""
    plan = background.plan()
    for line in plan.lines():
        _log(line)
    return 0 if plan.fits else 5


def _up(args: argparse.Namespace) -> int:
    """Exit 0 when every engine runs, 4 when some did not start (each says why): run.sh
    then serves the app with the engines that did."""
    if args.background:
        if not args.ids and not local_engines.specs():
            return 0  # SHOOTOUT_LOCAL_ENGINES=none: nothing to run behind the app
        pid, fresh = background.start(args.ids or None)
        _log(
            f"Shootout: {'installing and starting' if fresh else 'still installing and starting'} the "
            f"local engines in the background (pid {pid}); its lines: {background.up_log()}"
        )
        print(background.up_log())
        return 0
    statuses = local_engines.up(
        args.ids or None,
        install_missing=not args.no_install,
        log=_log,
        register=endpoints.register_local,
    )
    _show(statuses, args.json)
    failed = [s for s in statuses if s.status != "running"]
    if failed:
        _log(
            f"{len(failed)} of {len(statuses)} local engines did not start: "
            + "; ".join(f"{s.id} ({s.message})" for s in failed)
        )
        return 4
    return 0


def _down(args: argparse.Namespace) -> int:
    if not args.ids:
        for pid in background.stop():
            _log(f"stopped the background install and start (pid {pid})")
    _show(local_engines.down(args.ids or None), args.json)
    return 0


def _status(args: argparse.Namespace) -> int:
    statuses = [s for i in (args.ids or [None]) for s in local_engines.status(i)]
    _show(statuses, args.json)
    if not args.json:
        for pid in background.running():
            print(f"background install and start: pid {pid}, lines in {background.up_log()}")
    return 0 if all(s.status == "running" for s in statuses) else 3
