"""`shootout scrape URL`: detect what serves URL and print its normalised signals.

URL is an engine's base URL (the kind comes from the HTTP probe), a metrics URL (the kind
comes from the metric names), or a dcgm-exporter. It is read twice, --interval apart, so
rates, hit rates and latency percentiles have a window.
"""

from __future__ import annotations

import argparse

from commands import arguments, print_json
from services.core import units
from services.engines.signals import SIGNALS
from services.telemetry.scraper import scrape_once


def _format(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "ratio":
        return f"{value * 100:.1f} %"
    if unit == "bytes":
        return f"{value / 2**30:.2f} GiB"
    if unit == "s":
        return units.duration(value)
    return f"{value:.4g} {unit}".strip()


def handle(args: argparse.Namespace) -> int:
    result = scrape_once(args.url, kind=args.kind, interval_s=args.interval, timeout_s=args.timeout)
    if args.json:
        print_json(result.to_json())
        return 0
    print(f"{result.label} ({result.kind}, detected by {result.detected_by}) at {result.metrics_url}")
    for snapshot in result.snapshots:
        print(f"\n{snapshot.source} ({snapshot.label})")
        for name in snapshot.shown_signals():
            signal = SIGNALS.get(name)
            reading = snapshot.reading(name)
            shown = (
                _format(reading.value, signal.unit if signal else "")
                if reading.value is not None
                else reading.reason or ""
            )
            print(f"  {signal.title if signal else name:<28} {shown}")
        for process in snapshot.processes if snapshot.group == "gpu" else []:
            print(f"  process {process.get('name')}: {process.get('used_bytes')}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "scrape", help="read an engine's (or dcgm-exporter's) metrics and print the normalised signals"
    )
    parser.add_argument("url", help="engine base URL, metrics URL, or dcgm-exporter URL")
    parser.add_argument(
        "--kind", help="skip detection: vllm, sglang, trtllm, triton, llamacpp, tgi, dcgm, ..."
    )
    parser.add_argument(
        "--interval",
        type=arguments.seconds(zero=True),
        default=1.0,
        help="seconds between the two reads (default 1)",
    )
    parser.add_argument(
        "--timeout", type=arguments.seconds(), default=5.0, help="HTTP timeout in seconds (default 5)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=handle)
