"""Start-up of `shootout bench` (issue 4 target: the first request leaves within 1 s of
the command starting). Peers on this kind of machine: SGLang 2 s, AIPerf 6 s, vLLM 9.5 s,
GuideLLM 16 s.

Measured: wall time from spawning the command to the moment the first measured request was
handed to its connection (the run's stored start time plus the first request's start_s),
against the scripted server, with a fresh database each time (so the schema creation is
counted too) and with an existing one. Prints each try and the median.

    .venv/bin/python -m benchmarks.bench_startup [--tries 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from db.session import dispose_all
from services.bench.jobs import load_records
from tests.support.scripted_server import ScriptedServer


def one(server: ScriptedServer, data_dir: Path, extra: list[str], entry: list[str]) -> float:
    out = data_dir / "out.json"
    env = {
        **os.environ,
        "SHOOTOUT_DATA_DIR": str(data_dir),
        "SHOOTOUT_DATABASE_URL": f"sqlite:///{data_dir / 'shootout.db'}",
    }
    command = [
        sys.executable,
        *entry,
        "--url",
        server.base_url,
        "--model",
        server.model(ttft=5, itl=1, tokens=8),
        "--concurrency",
        "1",
        "--requests",
        "2",
        "--input-len",
        "16",
        "--output-len",
        "8",
        "--json",
        str(out),
        "--quiet",
        *extra,
    ]
    spawned = time.time()
    subprocess.run(command, env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    summary = json.loads(out.read_text())
    block = next(iter(summary["engines"].values()))

    os.environ.update({k: env[k] for k in ("SHOOTOUT_DATA_DIR", "SHOOTOUT_DATABASE_URL")})

    dispose_all()
    records = [r for r in load_records(summary["run_id"]) if not r.warmup]
    first = min(r.start_s for r in records if r.start_s is not None)
    return block["started_at_unix"] + first - spawned


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument(
        "--entry",
        choices=("cli", "module"),
        default="cli",
        help="cli.py bench (loads every command module) or python -m commands.bench",
    )
    args = parser.parse_args()
    entry = [str(ROOT / "cli.py"), "bench"] if args.entry == "cli" else ["-m", "commands.bench"]
    print(f"entry: {' '.join(entry)}")
    with ScriptedServer() as server:
        for label, extra, fresh in (
            ("fresh database, --kind given", ["--kind", "vllm"], True),
            ("existing database, --kind given", ["--kind", "vllm"], False),
            ("existing database, kind probed", [], False),
        ):
            times = []
            with tempfile.TemporaryDirectory() as folder:
                for _ in range(args.tries):
                    data_dir = Path(tempfile.mkdtemp(dir=folder)) if fresh else Path(folder)
                    times.append(one(server, data_dir, extra, entry))
            shown = ", ".join(f"{t:.2f}" for t in times)
            print(
                f"{label:34s} first request after {statistics.median(times):.2f} s (median; tries: {shown})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
