"""Client CPU per token and per request, this tree against an earlier commit, in one run
(issue 15). The earlier commit is exported with `git archive` to a temporary folder (and this working
tree copied beside it, uncommitted edits included); each
round runs benchmarks/bench_client_cpu.py (marginal method, scripted server in its own
process, unpaced) in the old tree, then in this one, alternating so that the machine's noise
falls on both; the medians are reported. Per request is the same figure with 1-token answers
(one content chunk a request: the per-request work dominates).

    .venv/bin/python -m benchmarks.client_cpu_ab [--baseline HEAD] [--rounds 5] [--paths client,runner]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_LINE = re.compile(r"^(\w+)\s+(-?[\d.]+) µs/token, of which kernel\s+(-?[\d.]+)")


def export(revision: str, folder: Path) -> Path:
    """The tree of `revision`, written under `folder` (the virtual environment is shared)."""
    archive = subprocess.run(
        ["git", "archive", revision], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def snapshot(folder: Path) -> Path:
    """A copy of this working tree as it is now, so that edits during the run do not reach it."""
    shutil.copytree(
        ROOT,
        folder,
        ignore=shutil.ignore_patterns(".git", ".venv", ".engines", "*_cache", ".hypothesis"),
    )
    return folder


def run_once(
    tree: Path, paths: str, tokens: int, sizes: tuple[int, int], args: argparse.Namespace
) -> dict[str, tuple[float, float]]:
    """{path: (µs per token, of which kernel)} of one bench_client_cpu.py run in `tree`."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.bench_client_cpu",
        "--paths",
        paths,
        "--itl",
        "0",
        "--tokens",
        str(tokens),
        "--concurrency",
        str(args.concurrency),
        "--small",
        str(sizes[0]),
        "--large",
        str(sizes[1]),
    ]
    output = subprocess.run(command, cwd=tree, check=True, capture_output=True, text=True).stdout
    figures = {}
    for line in output.splitlines():
        match = _LINE.match(line)
        if match:
            figures[match[1]] = (float(match[2]), float(match[3]))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="HEAD", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--paths", default="client,runner")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--small", type=int, default=64)
    parser.add_argument("--large", type=int, default=384)
    parser.add_argument(
        "--request-sizes",
        default="256,4096",
        help="small,large request counts of the 1-token runs (short runs are all noise)",
    )
    args = parser.parse_args()
    small, large = (int(n) for n in args.request_sizes.split(","))
    request_sizes = (small, large)
    with tempfile.TemporaryDirectory() as folder:
        trees = {
            "old": export(args.baseline, Path(folder) / "old"),
            "new": snapshot(Path(folder) / "new"),
        }
        # (tree, answer length, path) -> [(µs, kernel µs) per round]
        seen: dict[tuple[str, int, str], list[tuple[float, float]]] = {}
        for round_no in range(args.rounds):
            for tokens, sizes in ((args.tokens, (args.small, args.large)), (1, request_sizes)):
                for name, tree in trees.items():
                    for path, figure in run_once(tree, args.paths, tokens, sizes, args).items():
                        seen.setdefault((name, tokens, path), []).append(figure)
            print(f"round {round_no + 1}/{args.rounds} done", flush=True)
    print(
        f"\nmedians of {args.rounds} alternating rounds; baseline {args.baseline}; concurrency "
        f"{args.concurrency}; unpaced; marginal CPU of {args.large} minus {args.small} requests"
    )
    for tokens, unit in ((args.tokens, "µs/token"), (1, "µs/request")):
        for path in args.paths.split(","):
            old = seen.get(("old", tokens, path), [])
            new = seen.get(("new", tokens, path), [])
            if not old or not new:
                continue
            old_total = statistics.median(f[0] for f in old)
            new_total = statistics.median(f[0] for f in new)
            old_user = statistics.median(f[0] - f[1] for f in old)
            new_user = statistics.median(f[0] - f[1] for f in new)
            print(
                f"{path:7s} {tokens:4d}-token answers: old {old_total:7.2f} {unit} (user {old_user:6.2f})"
                f"  new {new_total:7.2f} (user {new_user:6.2f})  ratio {old_total / new_total:4.2f}x"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
