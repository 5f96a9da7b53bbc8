"""`shootout tune`: sweep an engine's own settings, benchmark each, print the best.

    shootout tune --kind llamacpp --set np=1,2,4 --set ctk=f16,q8_0
                       [--base c=8192] [--config "np=1 ctk=f16" ...]
                       [--workload KIND --input-len N --output-len N]
                       [--concurrency N | --rate R] [--requests N] [--sweep concurrency=1,2,4]
                       [--slo ttft=500,tpot=50,attainment=0.9]
                       [--start-command "docker run ... {args}" --stop-command "docker rm -f {name}"
                        --base-url http://gpu-box:{port}] [--json OUT]

Local engines (llamacpp, vllm) start on free ports on this machine; other kinds start from the
command templates ({port}, {name}, {args}; run without a shell). The run is stored like the
page's (Tune and Runs pages). A configuration that fails is reported, not fatal: the command
exits 0 when the sweep ran, 1 with one line when it could not start at all.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
from typing import TYPE_CHECKING, Any, NoReturn

from commands import arguments
from services.core import stored_json, units
from services.core.errors import ValidationError

if TYPE_CHECKING:
    from services.tune.summary import TuneConfigEntry


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see `shootout tune --help`)", file=sys.stderr)
        raise SystemExit(2)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="sweep an engine's settings, benchmark each, show the best",
        description=__doc__.splitlines()[0],
    )
    parser.__class__ = _OneLineParser
    parser.add_argument("--kind", default="llamacpp", help="engine kind: llamacpp, vllm, sglang, trtllm")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="a grid dimension (repeat: every combination is tried); a key starting with - is a raw flag",
    )
    parser.add_argument(
        "--base", action="append", default=[], metavar="KEY=V", help="a setting every configuration gets"
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="'K=V K=V'",
        help="an explicit configuration (repeat; replaces the grid)",
    )
    parser.add_argument("--workload", default="synthetic")
    parser.add_argument("--input-len", type=arguments.whole(1, arguments.MAX_TOKENS), default=32)
    parser.add_argument("--output-len", type=arguments.whole(1, arguments.MAX_TOKENS), default=16)
    parser.add_argument(
        "--concurrency", type=arguments.whole(1, arguments.MAX_COUNT), help="closed loop (default 2)"
    )
    parser.add_argument(
        "--rate",
        type=arguments.number(0, arguments.MAX_RATE, above=True),
        help="open loop: requests per second",
    )
    parser.add_argument(
        "--requests",
        type=arguments.whole(1, arguments.MAX_COUNT),
        default=8,
        help="measured requests per configuration (and sweep step)",
    )
    parser.add_argument(
        "--sweep",
        metavar="DIM=V1,V2",
        help="a load sweep per configuration: concurrency=1,2,4 or rate=1,2",
    )
    parser.add_argument("--slo", metavar="ttft=MS,ttfat=MS,tpot=MS,e2e=MS,attainment=F")
    parser.add_argument("--model", help="model name to request (default: the engine's first)")
    parser.add_argument("--start-command", help="start template for remote or containerised engines")
    parser.add_argument(
        "--stop-command", default="", help="stop template (the started process is ended anyway)"
    )
    parser.add_argument(
        "--base-url", default="http://127.0.0.1:{port}", help="where the started engine answers"
    )
    parser.add_argument("--health-url", default="{base_url}/health")
    parser.add_argument(
        "--start-timeout", type=arguments.seconds(), default=120.0, help="seconds to become healthy"
    )
    parser.add_argument("--name", default="")
    parser.add_argument(
        "--usd-per-hour",
        help="price per hour in dollars of the GPUs (e.g. 3.50): cost per 1M tokens and the cheapest configuration",
    )
    parser.add_argument(
        "--json", metavar="OUT", help="write the JSON summary to OUT ('-' for standard output)"
    )
    parser.set_defaults(handler=run)


def _pairs(text: str) -> dict[str, str]:
    # CLI start, as in build_spec.
    from services.tune.spec import parse_set

    result = {}
    for part in text.split():
        key, values = parse_set(part)
        if len(values) != 1:
            raise ValidationError(f"{part!r}: one value per setting in a configuration.")
        result[key] = values[0]
    return result


def _slo(text: str | None) -> Any:
    # CLI start, as in build_spec.
    from services.bench.stats import SloSpec

    if not text:
        return SloSpec()
    values: dict[str, float] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        names = {
            "ttft": "ttft_ms",
            "ttfat": "ttfat_ms",
            "tpot": "tpot_ms",
            "e2e": "e2e_ms",
            "attainment": "attainment",
        }
        if not sep or key.strip() not in names:
            raise ValidationError(
                f"--slo: expected ttft=MS,ttfat=MS,tpot=MS,e2e=MS,attainment=F, got {part!r}."
            )
        try:
            number = float(value)
        except ValueError:
            raise ValidationError(f"--slo: {value!r} is not a number.") from None
        if not math.isfinite(number):  # inf passed "above 0" and was stored as JSON null
            raise ValidationError(f"--slo: {value!r} is not a number.")
        values[names[key.strip()]] = number
    return SloSpec(**values)


def build_spec(args: argparse.Namespace) -> Any:
    # CLI start: services.tune.spec alone loads 500 modules (0.5 s); `shootout tune --help` loads 90.
    from services.bench.arrivals import LoadSpec
    from services.bench.form import parse_levels
    from services.bench.spec import SweepSpec
    from services.bench.workloads import WorkloadSpec
    from services.core import cost
    from services.tune.spec import TuneSpec, parse_set

    grid = dict(parse_set(text) for text in args.set)
    base = {}
    for text in args.base:
        key, values = parse_set(text)
        base[key] = values[0]
    if args.rate is not None:
        load = LoadSpec(
            mode="rate", rate=args.rate, concurrency=args.concurrency, requests=args.requests
        )
    else:
        load = LoadSpec(concurrency=args.concurrency or 2, requests=args.requests)
    sweep = SweepSpec()
    if args.sweep:
        dimension, values = parse_set(args.sweep)
        # The benchmark's own reading of levels: nan and inf are not levels (issue 56: an inf
        # was stored as JSON null and ended in a TypeError).
        levels = parse_levels(",".join(values))
        sweep = SweepSpec(kind=dimension, values=levels, stop_on_plateau=False)
    return TuneSpec(
        kind=args.kind,
        base=base,
        grid=grid,
        configs=tuple(_pairs(text) for text in args.config),
        workload=WorkloadSpec(kind=args.workload, input_len=args.input_len, output_len=args.output_len),
        load=load,
        sweep=sweep,
        slo=_slo(args.slo),
        launcher="command" if args.start_command else "local",
        start_command=args.start_command or "",
        stop_command=args.stop_command,
        base_url=args.base_url,
        health_url=args.health_url,
        model=args.model,
        start_timeout_s=args.start_timeout,
        name=args.name,
        usd_per_hour=cost.parse_usd_per_hour(args.usd_per_hour),
    )


def _line(config: TuneConfigEntry) -> str:
    metrics = stored_json.mapping(config.get("metrics"))
    if config["status"] in ("failed_to_start", "crashed"):
        return f"  {config['label']:<28} {config['status']}: {config['reason']}"
    if not metrics:
        return f"  {config['label']:<28} {config['status']}"
    ttft = stored_json.mapping(metrics.get("ttft_s")).get("p90")
    itl = stored_json.mapping(metrics.get("itl_s")).get("p90")
    return (
        f"  {config['label']:<28} {metrics.get('output_throughput_tok_s', 0):7.1f} tok/s  "
        f"p90 TTFT {units.duration(ttft, missing='-'):>8}  p90 ITL "
        f"{units.duration(itl, missing='-'):>8}  "
        f"{config['status']}"
    )


def run(args: argparse.Namespace) -> int:
    # CLI start: the tuning jobs bring the whole load generator; `shootout tune --help` loads 90 modules.
    from services.tune import jobs
    from services.tune.summary import TuneSummary

    spec = build_spec(args)
    run_id = jobs.create_run(spec, trusted=True)
    stop = threading.Event()
    print(
        f"tuning run #{run_id}: {len(spec.validate(trusted=True).expanded())} configurations",
        file=sys.stderr,
    )
    try:
        summary = jobs.execute_run(
            run_id,
            should_stop=stop.is_set,
            on_progress=lambda config: print(_line(config), file=sys.stderr),
        )
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (shootout.cli turns it into Ctrl-C)
        stop.set()
        raise
    results = TuneSummary.from_json(summary)
    print(f"best: {results.best.get('reason')}", file=sys.stderr)
    if results.launch:
        print(f"launch: {results.launch['plain']}", file=sys.stderr)
    cheapest = results.cheapest
    if cheapest:
        print(f"cheapest: {cheapest.get('reason')}", file=sys.stderr)
        launch = cheapest.get("launch") or {}
        if cheapest.get("label") != results.best_label and launch.get("plain"):
            print(f"launch: {launch['plain']}", file=sys.stderr)
    payload = {
        "run_id": run_id,
        "status": jobs.get_run(run_id).status,
        "kind": results.kind,
        "load": results.load,
        "workload": results.workload,
        "slo": results.slo,
        "pareto": results.pareto,
        "best": results.best,
        "cheapest": cheapest,
        "configs": [
            {
                k: c.get(k)
                for k in (
                    "label",
                    "settings",
                    "full_settings",
                    "status",
                    "reason",
                    "log_tail",
                    "metrics",
                    "sweep",
                    "command",
                    "reported",
                )
            }
            for c in results.configs
        ],
    }
    if args.json:
        text = json.dumps(payload, indent=2, sort_keys=True, default=str)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as out:
                out.write(text + "\n")
    return 0
