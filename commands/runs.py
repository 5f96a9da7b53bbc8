"""`shootout runs|export|import`: the run history from the command line.

runs list [filters]          runs show RUN        runs compare RUN RUN ...
runs note RUN TEXT           runs tag RUN --add T --remove T
runs archive RUN [--undo]    runs delete RUN --yes
export RUN [RUN ...] --format csv|json|html|steps [-o PATH]
import FILE [--format vllm|sglang|aiperf|guidellm|shootout] [--engine-name NAME] [--tag T]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from commands import arguments, print_json
from commands import gate as gate_flags
from services import importers, runs
from services.core import ids
from services.core.errors import ValidationError
from services.runs import display, reports, why
from services.runs.reports import streamed as exports
from services.runs.tables import comparison_table
from services.runstate.blind import HIDDEN_NOTE
from services.runstate.lifecycle import RunKind

if TYPE_CHECKING:
    import pandas as pd


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_runs(subparsers)
    _register_export(subparsers)
    _register_import(subparsers)


def _register_runs(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "runs", help="list, show, compare, annotate, archive and delete stored runs"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="stored runs, newest first")
    listing.add_argument(
        "--kind", action="append", choices=runs.RUN_KINDS, help="repeat for several kinds"
    )
    listing.add_argument("--engine")
    listing.add_argument("--model")
    listing.add_argument("--workload")
    listing.add_argument("--tag")
    listing.add_argument("--since", type=date.fromisoformat, help="YYYY-MM-DD")
    listing.add_argument("--until", type=date.fromisoformat, help="YYYY-MM-DD")
    listing.add_argument("--search", help="text in the name or notes")
    listing.add_argument("--archived", choices=("hide", "include", "only"), default="hide")
    listing.add_argument("--page", type=arguments.whole(1), default=1)
    listing.add_argument(
        "--limit", type=arguments.whole(1, 500), default=50, help="runs per page (at most 500)"
    )
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_list)

    show = actions.add_parser("show", help="one run: details and its engines' numbers")
    show.add_argument("run", type=ids.run_number)
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_show)

    compare = actions.add_parser(
        "compare",
        help="percentile table, comparability and verdicts for runs; with --fail-on, a CI gate",
    )
    compare.add_argument("runs", nargs="+", help="run numbers (12 13 or 12,13)")
    compare.add_argument(
        "--baseline",
        help="series key (12:vllm) or run number, added to the runs when not among them; "
        "default: the first",
    )
    compare.add_argument("--json", action="store_true")
    gate_flags.add_arguments(compare)
    compare.set_defaults(handler=_compare)

    note = actions.add_parser("note", help="replace a run's notes")
    note.add_argument("run", type=ids.run_number)
    note.add_argument("text")
    note.set_defaults(handler=_note)

    tag = actions.add_parser("tag", help="add or remove tags")
    tag.add_argument("run", type=ids.run_number)
    tag.add_argument("--add", action="append", default=[])
    tag.add_argument("--remove", action="append", default=[])
    tag.set_defaults(handler=_tag)

    archive = actions.add_parser("archive", help="hide a run from the default list (keeps everything)")
    archive.add_argument("run", type=ids.run_number)
    archive.add_argument("--undo", action="store_true", help="bring it back")
    archive.set_defaults(handler=_archive)

    remove = actions.add_parser("delete", help="delete a run and all its rows (asks unless --yes)")
    remove.add_argument("run", type=ids.run_number)
    remove.add_argument("--yes", action="store_true", help="do not ask")
    remove.set_defaults(handler=_delete)


def _register_export(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write a run as CSV, JSON, a self-contained HTML report, or its steps' cost and "
        "energy as CSV (--format steps)",
    )
    parser.add_argument(
        "runs", nargs="+", help="run number; several runs (html only) give a comparison report"
    )
    parser.add_argument("--format", choices=tuple(reports.EXPORT_FORMATS), default="json")
    parser.add_argument(
        "-o", "--output", help="file to write (default: shootout-run-N.FORMAT here; - for stdout)"
    )
    parser.add_argument("--baseline", help="comparison baseline (series key or run number)")
    parser.add_argument(
        "--allow-incomparable",
        action="store_true",
        help="html comparison: name winners although the runs are not comparable (said in the report)",
    )
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    parser.set_defaults(handler=_export)


def _register_import(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import",
        help="import results of vllm bench serve, SGLang bench_serving, AIPerf, GuideLLM or Shootout JSON",
    )
    parser.add_argument("file")
    parser.add_argument("--format", choices=tuple(importers.IMPORTERS), help="skip detection")
    parser.add_argument("--engine-name", help="name the engine (default: from the file)")
    parser.add_argument(
        "--usd-per-hour", help="price per hour in dollars of what served the run: its cost per 1M tokens"
    )
    parser.add_argument("--name", help="run name (default: tool and file name)")
    parser.add_argument("--tag", action="append", default=[])
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=_import)


def _print_json(payload: object) -> None:
    print_json(payload)


def _list(args: argparse.Namespace) -> int:
    filters = runs.RunFilter(
        kinds=tuple(args.kind or ()),
        engine=args.engine,
        model=args.model,
        workload=args.workload,
        tag=args.tag,
        since=args.since,
        until=args.until,
        text=args.search,
        archived=args.archived,
    )
    page = runs.list_runs(filters, page=args.page, page_size=args.limit)
    if args.json:
        _print_json(
            {
                "total": page.total,
                "page": page.page,
                "pages": page.pages,
                "runs": [asdict(i) for i in page.items],
            }
        )
        return 0
    if not page.items:
        print("no runs match")
        return 0
    for item in page.items:
        tags = f" [{', '.join(item.tags)}]" if item.tags else ""
        archived = " (archived)" if item.archived else ""
        print(
            f"#{item.id:<6} {item.created_at:%Y-%m-%d %H:%M}  {item.kind:<10} {item.status:<21} "
            f"{item.name or '-'}{tags}{archived}"
        )
        if item.headline:
            print(f"         {item.headline}")
    print(f"page {page.page} of {page.pages} ({page.total} run{'' if page.total == 1 else 's'})")
    return 0


def _show(args: argparse.Namespace) -> int:
    detail = runs.get_run(args.run)
    comparison = runs.comparison_of_run(detail)
    answers = display.answers_of(detail) if detail.kind == RunKind.PLAYGROUND else None
    if args.json:
        payload = asdict(detail)
        if comparison is not None:
            payload["table"] = comparison_table(comparison).to_dict(orient="records")
        if answers is not None:
            payload["answers"] = answers.to_dict(orient="records")
        _print_json(payload)
        return 0
    print(f"{detail.label}  ({detail.kind}, {detail.status}, {detail.created_at:%Y-%m-%d %H:%M} UTC)")
    print(
        f"engines: {HIDDEN_NOTE if detail.hidden else ', '.join(detail.engine_names) or '-'}   "
        f"model: {detail.model or '-'}   workload: {detail.workload or '-'}"
    )
    print(f"tags: {', '.join(detail.tags) or '-'}   requests stored: {detail.request_count}")
    if len(detail.repeat_ids) > 1:
        print(f"repeated runs of this setup: {', '.join('#' + str(i) for i in detail.repeat_ids)}")
    if detail.notes:
        print(f"notes: {detail.notes}")
    if detail.error:
        print(f"error: {detail.error}")
    if comparison is not None:
        print()
        print(comparison_table(comparison).to_string(index=False))
        _print_split(comparison)
    if answers is not None:
        _print_answers(answers, detail.hidden)
    return 0


def _print_answers(answers: pd.DataFrame, hidden: bool) -> None:
    """A Playground run's answers, as the run page shows them: while a blind exchange is hidden
    by blind name in its stored order with no engine (issue 45) and no timing or token count
    (issue 56), after the reveal with its engine and figures."""
    print()
    print("answers (" + (f"{HIDDEN_NOTE}):" if hidden else "engines shown):"))
    for row in answers.to_dict(orient="records"):
        if hidden:
            facts = [str(row["Answer"]), str(row["Status"])]
        else:
            facts = [
                str(row["Engine"]),
                str(row["Status"]),
                f"TTFT {row['TTFT']}",
                f"{row['Output tokens']} output tokens",
            ]
        if row["Turn"] != 1:
            facts.append(f"turn {row['Turn']}")
        if row["Error"]:
            facts.append("failed" if hidden else f"error: {row['Error']}")
        print("  " + _printable(" · ".join(facts)))
        text = row["Text"] if hidden else row["Answer"]
        for line in str(text).splitlines() or [""]:
            print(f"    {_printable(line)}")


def _printable(line: str) -> str:
    """Model text on a terminal: no control character (an escape sequence) gets through."""
    return "".join(ch if ch.isprintable() or ch == "\t" else "?" for ch in line)


def _print_split(comparison: runs.Comparison) -> None:
    """Where each engine's time went, in the Benchmarks page's words (nothing for runs
    stored without engines' times)."""
    lines = display.split_lines_of(comparison)
    if lines:
        print()
        print("where the time went (the engine's own times beside the client's):")
        for line in lines:
            print(f"  {line}")


def _compare(args: argparse.Namespace) -> int:
    ids = runs.parse_run_ids(args.runs)
    if args.baseline:
        # `runs compare --baseline 12 13`: the baseline is one of the compared runs.
        baseline_run = gate_flags.baseline_run_of(args.baseline)
        ids = [baseline_run, *(i for i in ids if i != baseline_run)]
    if gate_flags.wants_gate(args):
        baseline_run = gate_flags.baseline_run_of(args.baseline) if args.baseline else ids[0]
        return gate_flags.finish(args, baseline_run, ids[1:], as_json=args.json)
    comparison = runs.compare_runs(ids, args.baseline, allow_incomparable=args.allow_incomparable)
    table = comparison_table(comparison)
    report = comparison.comparability
    if args.json:
        _print_json(
            {
                "runs": list(comparison.run_ids),
                "baseline": comparison.baseline_series.key,
                "series": [s.key for s in comparison.series],
                "comparability": report.to_json(),
                "table": table.to_dict(orient="records"),
                "verdicts": [
                    {
                        "metric": v.metric,
                        "text": v.text,
                        "winner": v.winner,
                        "factor": v.factor,
                        "noise": v.noise.status,
                    }
                    for v in comparison.verdicts
                ],
                "not_repeats": comparison.repeat_notes,
                # Why each winner won (docs/measuring.md): never a verdict or an exit code.
                "explanations": [found.to_json() for found in why.explanations(comparison)],
            }
        )
        return 0
    print(table.to_string(index=False))
    _print_split(comparison)
    if report.verdicts:
        print()
        print(report.title)
        for line in report.lines:
            print(f"  {line}")
    if comparison.verdicts:
        print()
        for verdict in comparison.verdicts:
            print(f"- {verdict.text}")
    said = why.why_lines(why.explanations(comparison))
    if said:
        print()
        for line in said:
            print(f"why: {line}")
    for note in comparison.repeat_notes:
        print(f"note: {note}")
    return 0


def _note(args: argparse.Namespace) -> int:
    runs.update_run(args.run, notes=args.text)
    print(f"notes of run #{args.run} saved")
    return 0


def _tag(args: argparse.Namespace) -> int:
    if not args.add and not args.remove:
        raise ValidationError("Give --add TAG and/or --remove TAG.")
    detail = runs.get_run(args.run)
    tags = [t for t in detail.tags if t not in set(args.remove)] + list(args.add)
    detail = runs.update_run(args.run, tags=tags)
    print(f"tags of run #{args.run}: {', '.join(detail.tags) or '(none)'}")
    return 0


def _archive(args: argparse.Namespace) -> int:
    runs.set_archived(args.run, not args.undo)
    print(f"run #{args.run} {'brought back' if args.undo else 'archived'}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    detail = runs.get_run(args.run)
    if not args.yes:
        if not sys.stdin.isatty():
            raise ValidationError(f"Deleting run #{args.run} needs --yes when not asked interactively.")
        answer = input(
            f"Delete run {detail.label} with {detail.request_count} request rows, "
            f"{detail.exchange_count} exchanges and {detail.sample_count} samples? Type the run number to confirm: "
        )
        if answer.strip().lstrip("#") != str(args.run):
            print("not deleted")
            return 1
    result = runs.delete_run(args.run)
    print(
        f"run #{result.run_id} deleted ({result.requests} request rows, {result.exchanges} exchanges, {result.samples} samples)"
    )
    return 0


def _export(args: argparse.Namespace) -> int:
    ids = runs.parse_run_ids(args.runs)
    if len(ids) > 1 and args.format != "html":
        raise ValidationError(
            "Several runs export only as an HTML comparison report: add --format html."
        )
    if args.format in exports.STREAM_FORMATS:
        # CSV and JSON go to the file as they are read: a 500k-request run never sits in memory.
        stream = exports.stream_run(ids[0], args.format)
        filename, chunks = stream.filename, stream.chunks
    else:
        exported = (
            reports.export_comparison(ids, args.baseline, allow_incomparable=args.allow_incomparable)
            if len(ids) > 1
            else reports.export_run(ids[0], args.format)
        )
        filename, chunks = exported.filename, iter([exported.data])
    if args.output == "-":
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        return 0
    path = Path(args.output or filename)
    written = _write_atomically(path, chunks)
    if args.json:
        _print_json({"path": str(path.resolve()), "bytes": written, "format": args.format, "runs": ids})
    else:
        print(f"wrote {path} ({written:,} bytes)")
    return 0


def _write_atomically(path: Path, chunks: Iterator[bytes]) -> int:
    """Write beside `path` and rename at the end: a failed export leaves no half file."""
    partial = path.with_name(path.name + ".partial")
    written = 0
    try:
        with partial.open("wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
                written += len(chunk)
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise ValidationError(f"Cannot write {path}: {error.strerror or error}.") from error
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return written


def _import(args: argparse.Namespace) -> int:
    result = importers.import_file(
        Path(args.file),
        tool=args.format,
        engine_name=args.engine_name,
        name=args.name,
        tags=args.tag,
        usd_per_hour=args.usd_per_hour,
    )
    if args.json:
        _print_json(asdict(result))
        return 0
    ids = ", ".join(f"#{run_id}" for run_id in result.run_ids)
    print(f"imported {args.file} as {result.label}: run {ids} ({result.requests} request rows)")
    for warning in result.warnings:
        print(f"note: {warning}")
    return 0
