"""`shootout parity`: the same prompts, greedily, to several engines; do the answers match?

    shootout parity --engine A --engine B [--reference A] [--prompts FILE | --count N] [--json OUT]
    shootout parity --show RUN_ID [--json OUT]

Each prompt goes to each engine at temperature 0 with one seed and one max_tokens, with
log-probabilities where the engine returns them. Against the reference (the first engine by
default): exact-match rate, first-divergence token (median), token agreement, log-probability
difference and top-k agreement, and each engine's task score next to its tokens/s. Name an
engine twice to test it against itself. The run is stored (kind "parity") and shows on the
Parity and Runs pages. `--json OUT` writes the full result to OUT ("-": standard output).
Exit status: 0 when every engine answered every prompt, 1 when some failed or the run
failed (the JSON is still written), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

from commands import arguments
from services.core import ids, units
from services.core.errors import ValidationError
from services.runstate.lifecycle import RunStatus


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "parity",
        help="answer parity: do engines serving one model give the same answers?",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument(
        "--engine",
        action="append",
        default=[],
        dest="engines",
        metavar="NAME",
        help="a registered engine (2 to 6; repeat the flag; the same engine twice tests determinism)",
    )
    parser.add_argument(
        "--reference", help="the engine the others are compared with (default: the first)"
    )
    parser.add_argument(
        "--prompts", metavar="FILE", help="a JSONL prompt file (default: the shipped task set)"
    )
    parser.add_argument(
        "--count",
        type=arguments.whole(1, arguments.MAX_COUNT),
        default=None,
        help="prompts of the shipped task set to send (1-60, default 60)",
    )
    parser.add_argument(
        "--task-seed", type=arguments.seed(), default=None, help="the task set's seed (default 7)"
    )
    parser.add_argument(
        "--max-tokens",
        type=arguments.whole(1, arguments.MAX_TOKENS),
        default=None,
        help="max tokens per answer (default 48)",
    )
    parser.add_argument(
        "--seed",
        type=arguments.seed(),
        default=0,
        help="the sampling seed sent with every request (default 0)",
    )
    parser.add_argument(
        "--top-logprobs",
        type=arguments.whole(0, 20),
        default=None,
        help="top_logprobs asked for (0-20, default 5)",
    )
    parser.add_argument(
        "--show",
        type=ids.run_number,
        metavar="RUN_ID",
        help="print a stored parity run instead of running one",
    )
    parser.add_argument(
        "--json", metavar="OUT", help='write the result as JSON to OUT ("-" for standard output)'
    )
    parser.set_defaults(handler=_handle)


def _tasks(args: argparse.Namespace) -> tuple[list, str]:
    # CLI start, as in _handle: `shootout parity --help` loads 90 modules.
    from services.parity import tasks as task_module

    if args.prompts:
        if args.count is not None or args.task_seed is not None:
            raise ValidationError(
                "--count and --task-seed choose from the shipped task set; not with --prompts."
            )
        path = Path(args.prompts).expanduser()
        if not path.is_file():
            raise ValidationError(f"Prompt file {args.prompts!r} does not exist.")
        with path.open(encoding="utf-8", errors="replace") as handle:
            return task_module.load_prompt_lines(handle, path.name), f"file {path.name}"
    count = task_module.TASK_SET_SIZE if args.count is None else args.count
    seed = task_module.DEFAULT_SEED if args.task_seed is None else args.task_seed
    chosen = task_module.task_set(count, seed)
    return chosen, f"task set {task_module.TASK_SET_VERSION} (seed {seed}, {len(chosen)} prompts)"


def _handle(args: argparse.Namespace) -> int:
    # CLI start: the parity runner and its views bring the HTTP client, the database and numpy (1.2 s).
    from services.parity import results as views
    from services.parity import runner

    if args.show is not None:
        view = views.parity_view(args.show)
    else:
        if not args.engines:
            raise ValidationError(
                "Name the engines: --engine A --engine B (shootout engines list shows them)."
            )
        chosen, source = _tasks(args)
        options = {}
        if args.max_tokens is not None:
            options["max_tokens"] = args.max_tokens
        if args.top_logprobs is not None:
            options["top_logprobs"] = args.top_logprobs
        print(f"parity: {len(chosen)} prompts x {len(args.engines)} engines...", file=sys.stderr)
        run_id = runner.start_parity(
            args.engines,
            reference=args.reference,
            tasks=chosen,
            source=source,
            seed=args.seed,
            background=False,
            **options,
        )
        view = views.parity_view(run_id)
    if args.json:
        text = json.dumps(views.to_json(view), indent=2, sort_keys=True, default=str)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).expanduser().write_text(text + "\n", encoding="utf-8")
    if args.json != "-":
        _print_text(view)
    if view.status == RunStatus.FINISHED:
        return 0
    reason = view.error or "some requests failed (see the errors above)"
    print(f"error: parity run #{view.run_id} {view.status}: {reason}", file=sys.stderr)
    return 1


def _num(value: float | None, pattern: str = "{:.3f}") -> str:
    return "-" if value is None else pattern.format(value)


def _print_text(view) -> None:
    print(
        f"parity run #{view.run_id} ({view.status}): {view.source}, reference {view.reference}, "
        f"max_tokens {view.max_tokens}, seed {view.seed}"
    )
    print(
        f"{'engine':<22} {'score':>6} {'tok/s':>7} {'exact':>6} {'div p50':>8} {'agree':>6} {'|dlogp|':>8} "
        f"{'top-k':>6}  logprobs"
    )
    share = functools.partial(units.percent, signed=False, missing="-")
    for label, block in view.summary.engines.items():
        parity = view.summary.comparison(label)
        reference = block.is_reference
        print(
            f"{label[:22]:<22} {share(block.task_score):>6} "
            f"{_num(block.output_throughput_tok_s, '{:.1f}'):>7} "
            f"{'ref' if reference else share(parity.exact_match_rate):>6} "
            f"{'' if reference else _num(parity.divergence_median, '{:g}'):>8} "
            f"{'' if reference else share(parity.token_agreement_mean):>6} "
            f"{'' if reference else _num(parity.logprob_diff_mean):>8} "
            f"{'' if reference else share(parity.topk_rate):>6}  {block.logprobs}"
        )
        for message in block.first_errors:
            print(f"  {label}: {message}")
