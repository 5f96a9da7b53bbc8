"""The CI gate's flags and ending, shared by `shootout runs compare` and `shootout bench`.

    --fail-on "ttft_p90:+10%,output_tok_s:-5%"   checks (bad syntax: exit 2 before anything runs);
                                                  a trailing ? makes one optional
    --allow-incomparable                          judge runs that are not comparable (kept visible);
                                                  never an engine that broke the workload
    --allow-unknown-noise                         a change past its limit without a noise verdict passes
    --fail-on-unknown-noise                       accepted for old scripts: it is the default now
    --allow-stall                                 a candidate's stall (a tail event) does not fail
    --allow-jump                                  a jump no hardware explains (3x faster, identical
                                                  answers) does not fail
    --allow-untrusted                             judge figures of a client-bound run, or of engines
                                                  that ran together
    --summary-md PATH                             Markdown summary (also appended to $GITHUB_STEP_SUMMARY)
    --junit PATH                                  JUnit XML, one case per check and per finding

`bench --baseline` takes a run number or a file: a `bench --json` document, a Shootout export,
another tool's results. Exit codes: 0 pass, 1 regression (a check, a stall, a jump, a broken
workload, nothing completed), 2 bad arguments, 3 not comparable, 4 not measured (a figure
missing, or figures that cannot be trusted), 5 tool error (a missing run, an unreadable
baseline): docs/ci-gate.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from commands import print_json
from services.core import ids
from services.core.errors import ShootoutError, ValidationError
from services.core.json_types import JsonOut
from services.runs import gate, get_run
from services.runstate.lifecycle import RunKind, RunStatus

_EXAMPLE_IN_HELP = gate.EXAMPLE.replace("%", "%%")

#: GitHub Actions' job summary file: the Markdown is appended there when it is set.
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def fail_on(text: str) -> list[gate.Threshold]:
    """argparse type: a bad --fail-on is an argument error (exit 2) with gate's own message."""
    try:
        return gate.parse_fail_on(text)
    except gate.GateSyntaxError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--fail-on: ")) from None


def add_arguments(parser: argparse.ArgumentParser | Any, bench: bool = False) -> None:
    group = parser.add_argument_group("CI gate")
    if bench:
        group.add_argument(
            "--baseline",
            metavar="RUN|FILE",
            help="judge this run against a stored run, or a results file imported as one "
            "(a Shootout export, vLLM, SGLang, AIPerf, GuideLLM)",
        )
    group.add_argument(
        "--fail-on",
        type=fail_on,
        metavar="CHECKS",
        # argparse formats help with %: the example's own % signs are doubled.
        help=f'exit 1 on a regression past these limits, e.g. "{_EXAMPLE_IN_HELP}"; '
        "error_rate:+Npp and success_rate:-Npp count failed requests in percentage points "
        "(error_rate:+1pp is checked unless named); a trailing ? makes a check optional "
        "(not comparable: exit 3; a figure not measured: exit 4)",
    )
    group.add_argument(
        "--allow-incomparable",
        action="store_true",
        help="judge (and name winners) although the runs are not comparable; said in every output",
    )
    group.add_argument(
        "--allow-unknown-noise",
        action="store_true",
        help="a change past its limit whose noise is unknown (no repeats, no request records) "
        "passes, and says so; without it, such a change fails",
    )
    group.add_argument(
        "--fail-on-unknown-noise",
        action="store_true",
        help="the default (kept so that existing CI scripts work): a change past its limit fails "
        "when its noise is unknown",
    )
    group.add_argument(
        "--allow-stall",
        action="store_true",
        help="a candidate's stall (a wait far beyond the run's own, a tail event) does not fail "
        "the gate; it is still shown",
    )
    group.add_argument(
        "--allow-jump",
        action="store_true",
        help=f"a candidate {gate.JUMP_FACTOR:g}x faster than its baseline on the same setup, or "
        "giving one answer to distinct prompts, does not fail the gate; it is still shown",
    )
    group.add_argument(
        "--allow-untrusted",
        action="store_true",
        help="judge a run whose load generator was client-bound or whose engines ran together "
        "(exit 4 without it); said in every output",
    )
    group.add_argument("--summary-md", metavar="PATH", help="write the gate's Markdown summary here")
    group.add_argument("--junit", metavar="PATH", help="write the gate's JUnit XML here")


class GateUsageError(ValidationError):
    """Gate flags that do not go together: bad arguments, exit 2 (as argparse's own)."""

    exit_code = gate.EXIT_BAD_ARGUMENTS


def wants_gate(args: argparse.Namespace, judged: bool = False) -> bool:
    """Whether the gate runs (--fail-on); its flags without it are bad arguments. `judged`: the
    gate runs anyway (`bench --baseline`, which judges comparability and the findings)."""
    noise_flags = args.fail_on_unknown_noise or args.allow_unknown_noise
    if (args.summary_md or args.junit or noise_flags) and args.fail_on is None:
        raise GateUsageError(
            "--summary-md, --junit, --allow-unknown-noise and --fail-on-unknown-noise go with --fail-on."
        )
    finding_flags = args.allow_stall or args.allow_jump or args.allow_untrusted
    if finding_flags and args.fail_on is None and not judged:
        raise GateUsageError(
            "--allow-stall, --allow-jump and --allow-untrusted go with --fail-on (or bench's --baseline)."
        )
    if args.fail_on_unknown_noise and args.allow_unknown_noise:
        raise GateUsageError("--allow-unknown-noise and --fail-on-unknown-noise contradict each other.")
    return args.fail_on is not None


def _write(path: str, text: str, append: bool = False) -> None:
    try:
        with Path(path).open("a" if append else "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise ValidationError(f"Cannot write {path}: {error.strerror or error}.") from None


def result_json(result: gate.GateResult) -> JsonOut:
    return {
        "outcome": result.outcome,
        "exit_code": result.exit_code,
        "message": result.message,
        "comparable": result.comparable,
        "override": result.override,
        "counts": result.counts,
        "nothing_completed": result.nothing_completed,
        "runs": list(result.run_ids),
        "comparability": [pair.verdict.to_json() for pair in result.pairs],
        "checks": [
            {
                "check": check.threshold.text,
                "optional": check.threshold.optional,
                "default": check.threshold.implicit,
                "engine": check.engine,
                "baseline": check.baseline_value,
                "candidate": check.candidate_value,
                "change_pct": check.change_pct,
                "noise": check.noise.status,
                "noise_detail": check.noise.detail,
                "status": check.status,
            }
            for check in result.checks
        ],
        "unpaired": list(result.unpaired),
        "not_repeats": list(result.not_repeats),
        "findings": [
            {
                "kind": found.kind,
                "engine": found.engine,
                "side": found.side,
                "status": found.status,
                "flag": found.flag,
                "text": found.text,
            }
            for found in result.findings
        ],
    }


def finish(
    args: argparse.Namespace, baseline_run: int, candidate_runs: list[int], as_json: bool = False
) -> int:
    """Judge the runs, print the result, write the Markdown and JUnit files; the exit code."""
    result = gate.evaluate(
        baseline_run,
        candidate_runs,
        args.fail_on or [],
        allow_incomparable=args.allow_incomparable,
        allow_unknown_noise=getattr(args, "allow_unknown_noise", False),
        allowed=gate.Allowed(
            stall=getattr(args, "allow_stall", False),
            jump=getattr(args, "allow_jump", False),
            untrusted=getattr(args, "allow_untrusted", False),
        ),
    )
    summary = gate.markdown(result)
    if args.summary_md:
        _write(args.summary_md, summary)
    if os.environ.get(STEP_SUMMARY_ENV):
        _write(os.environ[STEP_SUMMARY_ENV], summary, append=True)
    if args.junit:
        _write(args.junit, gate.junit(result))
    if as_json:
        print_json(result_json(result))
    else:
        # `bench --json -`: standard output is the JSON document; the gate's lines go beside it.
        out = sys.stderr if getattr(args, "json", None) == "-" else sys.stdout
        # Names come from imported files too: no control character reaches the terminal.
        for pair in result.pairs:
            print(gate.plain(pair.verdict.headline), file=out)
            for difference in pair.verdict.differences:
                print(f"  {gate.plain(difference.text)}", file=out)
            # What the comparison measures (another model, engine version, weights): said here,
            # not only in the Markdown, so a CI log shows it.
            for change in pair.verdict.engine_changes:
                print(f"  changed (what is compared): {gate.plain(change.text)}", file=out)
            for unknown in pair.verdict.unchecked:
                print(f"  not recorded on one side, not checked: {gate.plain(unknown)}", file=out)
        for note in result.not_repeats:
            print(f"  note: {gate.plain(note)}", file=out)
        for found in result.findings:
            print(
                f"[{found.status}] {gate.plain(found.engine)} {found.kind}: {gate.plain(found.text)}",
                file=out,
            )
        for check in result.checks:
            print(f"[{check.status}] {gate.plain(check.text)}", file=out)
    plain = not as_json and getattr(args, "json", None) != "-"
    stream = sys.stdout if result.exit_code == gate.EXIT_PASS and plain else sys.stderr
    print(f"gate: {gate.plain(result.message)}", file=stream)
    return result.exit_code


def baseline_run_of(value: str) -> int:
    """A baseline given as a run number (12, #12) or a series key (12:vllm): its run."""
    text = value.strip().lstrip("#").split(":", 1)[0]
    try:
        return ids.parse_id(text)
    except ValidationError:
        raise ValidationError(f"--baseline {value!r} is not a run number (or RUN:ENGINE).") from None


def bench_baseline(args: argparse.Namespace) -> int | None:
    """The baseline run of `bench --baseline`, found (or imported) before the benchmark runs,
    so that a wrong baseline costs no benchmark; None without one."""
    if args.fail_on is not None and not args.baseline:
        raise GateUsageError("--fail-on needs --baseline RUN|FILE to compare with.")
    if args.baseline:
        wants_gate(args, judged=True)
        return baseline_for_bench(args.baseline)
    wants_gate(args)
    return None


def baseline_for_bench(value: str) -> int:
    """`bench --baseline RUN|FILE`: a stored run's number, or a results file (a `bench --json`
    document, a Shootout export, another tool's results), imported now as the baseline run."""
    text = value.strip()
    if text.lstrip("#").isdigit():
        try:
            return get_run(ids.parse_id(text)).id  # a missing run: one line, before the benchmark
        except ShootoutError as error:
            raise gate.GateToolError(str(error)) from None
    path = Path(text)
    if not path.is_file():
        raise gate.GateToolError(f"--baseline {value!r} is neither a run number nor a readable file.")
    # CLI start: the importers bring the bench jobs and the HTTP client (0.2 s to `shootout bench`),
    # which only a baseline file needs.
    from services import importers

    try:
        document = _bench_json_as_export(path)
        if document is not None:
            imported = importers.import_file(document, path.name, tags=["baseline"])
        else:
            imported = importers.import_file(path, tags=["baseline"])
    except ShootoutError as error:  # a file that does not read as results
        raise gate.GateToolError(f"--baseline {value!r}: {error}") from None
    return imported.run_ids[0]


#: A `bench --json` document holds a summary, no request rows: a larger file is another tool's.
_BENCH_JSON_MAX_BYTES = 16 * 1024 * 1024


def _bench_json_as_export(path: Path) -> bytes | None:
    """A `bench --json` document (the run's summary with its run id and status) as a Shootout
    export of that run, which the importer reads (its summary, fingerprints included; no
    request rows, so its checks have no within-run noise); None for any other file."""
    try:
        if path.stat().st_size > _BENCH_JSON_MAX_BYTES:
            return None
        document = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not (
        isinstance(document, dict)
        and isinstance(document.get("run_id"), int)
        and isinstance(document.get("engines"), dict)
        and "format" not in document
    ):
        return None
    run_id, status = document.pop("run_id"), document.pop("status", None)
    export = {
        "format": "shootout.run",
        "version": 1,
        "run": {
            "id": run_id,
            "kind": RunKind.BENCHMARK.value,
            "status": status or RunStatus.FINISHED.value,
            "summary": document,
        },
    }
    return json.dumps(export).encode()
