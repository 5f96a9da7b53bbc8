"""`shootout bench`: a load benchmark from the command line, stored like the page's.

    shootout bench --engine NAME [--engine NAME2] | --url URL [--model M]
                        --concurrency N | --rate R [--max-concurrency N]
                        --requests N | --duration S  --input-len N --output-len N
                        [--workload KIND] [--timeout S] [--workers N|auto] [--ray ADDRESS] [--json OUT]

The run goes into the same database as the app's (it shows on the Benchmarks and Runs
pages). Failing requests do not fail the command: it ends normally and reports them by
error class. Bad arguments or an unknown engine exit non-zero with one line. Imports stay
lazy (no pandas, plotly or streamlit here) so the first request leaves within a second.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from commands import arguments, gate, print_json
from commands.bench_table import results_table as _table
from services.bench.form import BenchForm, parse_levels, parse_workers, to_spec
from services.bench.spec import MAX_WORKERS, BenchSpec, EngineTarget
from services.bench.workloads import WORKLOAD_KINDS
from services.core import cost
from services.core.errors import ShootoutError, ValidationError
from services.core.json_types import JsonOut
from services.core.processes import sigterm_as_ctrl_c
from services.core.urls import check_url
from services.engines import kinds

#: The flags' defaults: the Benchmarks page's (services/bench/form.py lists those that differed).
DEFAULTS = BenchForm()


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one clear line (not the usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see `shootout bench --help`)", file=sys.stderr)
        raise SystemExit(2)


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = parse_levels(text)
    except ValidationError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    return values


#: An SLO in milliseconds: above 0, at most the longest wait an option takes.
_milliseconds = arguments.number(0, arguments.MAX_SECONDS * 1000, above=True)


def _workers(text: str) -> int:
    try:
        return parse_workers(text)
    except ValidationError:
        raise argparse.ArgumentTypeError(
            f"expected a number from 1 to {MAX_WORKERS} or auto, got {text!r}"
        ) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="run a load benchmark against one or more engines",
        description=__doc__.splitlines()[0],
    )
    parser.__class__ = _OneLineParser  # same parser, one-line errors
    _target_arguments(parser.add_argument_group("target"))
    _load_arguments(parser.add_argument_group("load shape"))
    _workload_arguments(parser.add_argument_group("workload"))
    _measuring_arguments(parser.add_argument_group("measuring"))
    output = parser.add_argument_group("output")
    output.add_argument("--name", default=DEFAULTS.name)
    output.add_argument("--tag", action="append", default=list(DEFAULTS.tags))
    output.add_argument(
        "--json", metavar="OUT", help="write the JSON summary to OUT ('-' for standard output)"
    )
    output.add_argument("--quiet", action="store_true", help="no progress lines on standard error")
    gate.add_arguments(parser, bench=True)
    parser.set_defaults(handler=run)


def _target_arguments(target: argparse._ArgumentGroup) -> None:
    target.add_argument(
        "--engine",
        action="append",
        default=[],
        metavar="NAME",
        help="a registered engine (repeat for several: same workload, side by side)",
    )
    target.add_argument(
        "--url", metavar="URL", help="an unregistered endpoint (base URL, with or without /v1)"
    )
    target.add_argument(
        "--model", help="model name to request (default: the engine's first listed model)"
    )
    target.add_argument("--kind", help="engine kind for --url (default: detected by probing it)")
    target.add_argument("--api-key-env", help="environment variable holding the API key (for --url)")
    target.add_argument(
        "--usd-per-hour",
        help="price per hour in dollars behind --url (e.g. 3.50), for cost per 1M tokens",
    )
    target.add_argument(
        "--parallel",
        action="store_true",
        help="run several engines at the same time (default: one after another, fair on shared hardware)",
    )


def _load_arguments(load: argparse._ArgumentGroup) -> None:
    load.add_argument(
        "--concurrency",
        type=arguments.whole(1, arguments.MAX_COUNT),
        help=f"closed loop: this many requests in flight (default {DEFAULTS.concurrency} without --rate)",
    )
    load.add_argument(
        "--rate",
        type=arguments.number(0, arguments.MAX_RATE, above=True),
        help="open loop: requests per second",
    )
    load.add_argument(
        "--max-concurrency",
        type=arguments.whole(1, arguments.MAX_COUNT),
        help="with --rate: cap on requests in flight",
    )
    load.add_argument("--arrival", default=DEFAULTS.arrival, choices=("poisson", "gamma", "constant"))
    load.add_argument(
        "--burstiness",
        type=arguments.number(0, 1000, above=True),
        default=DEFAULTS.burstiness,
        help="gamma shape: <1 burstier, >1 smoother",
    )
    load.add_argument(
        "--trace-replay", action="store_true", help="send at the trace's own arrival times"
    )
    load.add_argument(
        "--trace-speed",
        type=arguments.number(0, 1e6, above=True),
        default=DEFAULTS.trace_speed,
        help="speed-up of trace replay",
    )
    load.add_argument(
        "--requests",
        type=arguments.whole(1, arguments.MAX_COUNT),
        help="measured requests per engine (and per sweep step)",
    )
    load.add_argument(
        "--duration", type=arguments.seconds(), metavar="S", help="or: seconds per engine (and per step)"
    )
    load.add_argument(
        "--warmup",
        type=arguments.whole(0, arguments.MAX_COUNT),
        default=DEFAULTS.warmup,
        help="warm-up requests per engine, left out of the results",
    )
    load.add_argument(
        "--ramp-up",
        type=arguments.seconds(zero=True),
        default=DEFAULTS.ramp_up_s,
        metavar="S",
        help="ramp the rate/concurrency up over S s",
    )
    load.add_argument("--seed", type=arguments.seed(), default=DEFAULTS.seed)


def _workload_arguments(work: argparse._ArgumentGroup) -> None:
    work.add_argument(
        "--workload",
        default=DEFAULTS.workload,
        choices=WORKLOAD_KINDS,
    )
    work.add_argument(
        "--input-len",
        type=arguments.whole(1, arguments.MAX_TOKENS),
        default=DEFAULTS.input_len,
        help="prompt tokens (mean for distributions)",
    )
    work.add_argument(
        "--output-len",
        type=arguments.whole(1, arguments.MAX_TOKENS),
        default=DEFAULTS.output_len,
        help="answer tokens (mean for distributions)",
    )
    work.add_argument(
        "--length-dist",
        default=DEFAULTS.length_dist,
        choices=("fixed", "uniform", "normal", "sharegpt", "conversation", "code"),
    )
    work.add_argument("--range-ratio", type=arguments.number(0, 1), default=DEFAULTS.range_ratio)
    work.add_argument("--max-input-len", type=arguments.whole(1, arguments.MAX_TOKENS))
    work.add_argument("--max-output-len", type=arguments.whole(1, arguments.MAX_TOKENS))
    work.add_argument(
        "--prefix-groups", type=arguments.whole(1, arguments.MAX_COUNT), default=DEFAULTS.prefix_groups
    )
    work.add_argument(
        "--prefix-len", type=arguments.whole(1, arguments.MAX_TOKENS), default=DEFAULTS.prefix_len
    )
    work.add_argument("--turns", type=arguments.whole(1, 100), default=DEFAULTS.turns)
    work.add_argument("--schema", metavar="FILE", help="JSON schema file for --workload structured")
    work.add_argument("--prompts", metavar="FILE", help="JSONL prompts for --workload file")
    work.add_argument("--trace", default=DEFAULTS.trace, choices=("conversation", "conv", "code"))
    work.add_argument(
        "--length-scale",
        type=arguments.number(0, 1000, above=True),
        default=DEFAULTS.length_scale,
        help="scales the trace's lengths",
    )
    work.add_argument(
        "--free-output", action="store_true", help="let answers end early (no ignore_eos/min_tokens)"
    )


def _measuring_arguments(options: argparse._ArgumentGroup) -> None:
    options.add_argument(
        "--timeout",
        type=arguments.seconds(),
        default=DEFAULTS.timeout_s,
        metavar="S",
        help="limit on one request, seconds",
    )
    options.add_argument("--temperature", type=arguments.number(0, 2), default=DEFAULTS.temperature)
    options.add_argument("--percentiles", type=_floats, default=DEFAULTS.percentiles, metavar="LIST")
    options.add_argument("--slo-ttft-ms", type=_milliseconds)
    options.add_argument(
        "--slo-ttfat-ms",
        type=_milliseconds,
        help="limit on time to first answer token (a reasoning model's first token after thinking)",
    )
    options.add_argument("--slo-tpot-ms", type=_milliseconds)
    options.add_argument("--slo-e2e-ms", type=_milliseconds)
    options.add_argument(
        "--slo-attainment", type=arguments.number(0, 1, above=True), default=DEFAULTS.slo_attainment
    )
    _search_arguments(options)
    options.add_argument(
        "--no-calibrate", action="store_true", help="skip the tokenizer check of the prompt words"
    )
    options.add_argument(
        "--no-connect-ahead",
        action="store_true",
        help="open connections inside the measured requests (TTFT then includes connecting)",
    )
    options.add_argument(
        "--no-engine-metrics", action="store_true", help="do not record the engines' /metrics"
    )
    options.add_argument(
        "--workers",
        type=_workers,
        default=DEFAULTS.workers,
        metavar="N|auto",
        help="load-generator processes on this host (auto: chosen by the self-check)",
    )
    options.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=DEFAULTS.ray_address,
        help="run the workers as Ray actors over this cluster's nodes (HOST:PORT; "
        "needs requirements-ray.txt); --workers then counts actors (1: one per node)",
    )


def _search_arguments(options: argparse._ArgumentGroup) -> None:
    """A sweep of load levels, or the search for the highest load meeting the SLOs."""
    options.add_argument(
        "--sweep", choices=("concurrency", "rate"), help="step the load through --sweep-values"
    )
    options.add_argument("--sweep-values", type=_floats, metavar="LIST", help="e.g. 1,2,4,8,16")
    options.add_argument(
        "--slo-search", choices=("rate", "concurrency"), help="find the highest load meeting the SLOs"
    )
    options.add_argument(
        "--search-start",
        type=arguments.number(0, arguments.MAX_RATE, above=True),
        default=DEFAULTS.search_start,
    )
    options.add_argument(
        "--search-max",
        type=arguments.number(0, arguments.MAX_RATE, above=True),
        default=DEFAULTS.search_max,
    )
    options.add_argument("--search-steps", type=arguments.whole(0, 12), default=DEFAULTS.search_steps)


def _url_target(args: argparse.Namespace) -> Any:
    # Before the probe: a bad price is named at once, not after a 3 s wait.
    price = cost.parse_usd_per_hour(args.usd_per_hour)
    url, parts = check_url(args.url)  # "http://[::1", a port past 65535: one line
    port, host = parts.port, parts.hostname or ""  # check_url refused a URL without a host
    base = url.rstrip("/").removesuffix("/chat/completions").removesuffix("/v1")
    # CLI start: registration brings the probe's HTTP client (httpx2, 120 modules), which only
    # a run against a URL needs.
    from services.engines import registration

    kind, model = args.kind, args.model
    try:
        identified = registration.identify(
            base, kind=kind, model=model, api_key_env=args.api_key_env, timeout_s=3.0
        )
        kind, model = identified.kind, identified.model
    except Exception:  # noqa: BLE001, S110 - an engine that is down still gets its (failing) run
        pass
    if kind is not None and kind not in kinds():
        raise ValidationError(f"Unknown engine kind {kind!r}; known: {', '.join(kinds())}.")
    name = f"{host}:{port}" if port else host
    return EngineTarget(
        name=name,
        base_url=base,
        kind=kind or "openai",
        model=model,
        api_key_env=args.api_key_env,
        usd_per_hour=price,
    )


def form_from_args(args: argparse.Namespace) -> BenchForm:
    """The choices the flags describe (ValidationError with one line when they do not fit).
    The CLI asks for what a script should say: a bound (--requests/--duration), a sweep's
    levels; --concurrency/--rate choose the loop, so their argparse defaults are None."""
    if args.concurrency is not None and args.rate is not None:
        raise ValidationError(
            "Give --concurrency N (closed loop) or --rate R (open loop), not both "
            "(with a rate, cap in-flight requests with --max-concurrency)."
        )
    if args.requests is None and args.duration is None:
        raise ValidationError("Bound the run: --requests N or --duration S.")
    if args.sweep and args.slo_search:
        raise ValidationError("Choose --sweep or --slo-search, not both.")
    if args.sweep and not args.sweep_values:
        raise ValidationError("A sweep needs its load levels: --sweep-values, for example 1,2,4,8.")
    schema_text = ""
    if args.schema:
        try:
            schema_text = Path(args.schema).read_text(encoding="utf-8")
        except OSError as error:
            raise ValidationError(f"Cannot read the JSON schema {args.schema!r}: {error}") from None
    mode = "trace" if args.trace_replay else "rate" if args.rate is not None else "concurrency"
    return replace(
        DEFAULTS,
        engines=tuple(args.engine),
        model=args.model,
        parallel=args.parallel,
        # --trace-replay alone means the trace's own requests at the trace's own times.
        workload="trace" if args.trace_replay and args.workload == "synthetic" else args.workload,
        input_len=args.input_len,
        output_len=args.output_len,
        length_dist=args.length_dist,
        range_ratio=args.range_ratio,
        max_input_len=args.max_input_len,
        max_output_len=args.max_output_len,
        prefix_groups=args.prefix_groups,
        prefix_len=args.prefix_len,
        turns=args.turns,
        schema_text=schema_text,
        prompts_file=args.prompts or "",
        trace=args.trace,
        length_scale=args.length_scale,
        fixed_output=not args.free_output,
        mode=mode,
        concurrency=DEFAULTS.concurrency if args.concurrency is None else args.concurrency,
        rate=DEFAULTS.rate if args.rate is None else args.rate,
        max_concurrency=args.max_concurrency,
        arrival=args.arrival,
        burstiness=args.burstiness,
        trace_speed=args.trace_speed,
        requests=args.requests,
        duration_s=args.duration,
        warmup=args.warmup,
        ramp_up_s=args.ramp_up,
        seed=args.seed,
        sweep=args.sweep or ("slo_search" if args.slo_search else "none"),
        sweep_values=args.sweep_values or (),
        search_over=args.slo_search or DEFAULTS.search_over,
        search_start=args.search_start,
        search_max=args.search_max,
        search_steps=args.search_steps,
        slo_ttft_ms=args.slo_ttft_ms,
        slo_ttfat_ms=args.slo_ttfat_ms,
        slo_tpot_ms=args.slo_tpot_ms,
        slo_e2e_ms=args.slo_e2e_ms,
        slo_attainment=args.slo_attainment,
        timeout_s=args.timeout,
        temperature=args.temperature,
        percentiles=args.percentiles,
        calibrate_prompts=not args.no_calibrate,
        connect_ahead=not args.no_connect_ahead,
        record_engine_metrics=not args.no_engine_metrics,
        workers=args.workers,
        ray_address=args.ray,
        name=args.name,
        tags=tuple(args.tag),
    )


def build_spec(args: argparse.Namespace) -> BenchSpec:
    """The BenchSpec the flags describe: the same translation as the Benchmarks page's."""
    form = form_from_args(args)
    if args.engine and args.url:
        raise ValidationError("Give --engine NAME or --url URL, not both.")
    if not args.engine and not args.url:
        raise ValidationError("Say what to benchmark: --engine NAME (registered) or --url URL.")
    if args.engine and args.usd_per_hour is not None:
        raise ValidationError(
            "--usd-per-hour prices a --url; a registered engine's price is its own: "
            "`shootout engines edit NAME --usd-per-hour X`."
        )
    return to_spec(form, None if args.engine else [_url_target(args)])


class _Progress:
    """A progress line on standard error as each engine starts each step, and one at the end
    (the runner reports step ends with an empty message: nothing to print for those)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.lock = threading.Lock()

    def __call__(self, fraction: float, message: str) -> None:
        if self.quiet or not (message or fraction >= 1.0):
            return
        with self.lock:
            print(f"[bench] {fraction:4.0%} {message or 'done'}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    # CLI start: the jobs package adds 0.17 s to `shootout bench --help` and to a bad argument's exit.
    from services.bench.jobs import create_run, execute_run

    spec = build_spec(args)
    baseline = gate.bench_baseline(args)
    if spec.ray_address:
        # Only a --ray run needs the Ray pool (Ray itself is optional).
        from services.bench.ray_pool import connect

        connect(spec.ray_address)  # unreachable: one line and exit 1 before a run is stored
    run_id = create_run(spec)
    progress = _Progress(args.quiet)
    if not args.quiet:
        print(f"[bench] run #{run_id}: {spec.label}", file=sys.stderr, flush=True)
    stop = threading.Event()
    try:
        summary = execute_run(
            run_id, on_progress=progress, should_stop=stop.is_set, wait_for_metrics_s=0.0
        )
    except KeyboardInterrupt:
        print(f"interrupted: run #{run_id} kept what it had measured", file=sys.stderr)
        return 130
    payload = cli_summary(run_id, summary)
    if args.json == "-":
        print_json(payload)
    elif args.json:
        try:
            Path(args.json).write_text(
                json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
            )
        except OSError as error:
            raise ValidationError(f"Cannot write {args.json!r}: {error}") from None
    if not args.quiet or not args.json:
        print(_table(payload, spec.to_dict()), file=sys.stderr if args.json == "-" else sys.stdout)
    return 0 if baseline is None else gate.finish(args, baseline, [run_id])


def cli_summary(run_id: int, summary: JsonOut) -> JsonOut:
    """The --json document: the stored summary plus the run id and final status."""
    # CLI start, as in run.
    from services.bench.jobs import get_run

    view = get_run(run_id)
    return {"run_id": run_id, "status": view.status, **summary}


def main(argv: list[str] | None = None) -> int:
    """`python -m commands.bench ...`: the same command without loading the other commands."""
    root = argparse.ArgumentParser(prog="python -m commands.bench")
    register(root.add_subparsers(dest="command"))
    args = root.parse_args(["bench", *(sys.argv[1:] if argv is None else argv)])

    try:
        with sigterm_as_ctrl_c():
            return int(args.handler(args) or 0)
    except ShootoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
