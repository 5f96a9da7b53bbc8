"""Runs page speed with a big history: 10,000 runs and 5,000,000 request rows.

Generates the history in a temporary SQLite database (bulk SQL in SQLite itself, no ORM
objects), then times what the Runs page does: the first page of the list (plain, filtered,
deep), the filter options, the whole history page rendered by AppTest, a 4-run comparison
(service and rendered page), and prints the figures. Targets: list < 1 s, 4-run
comparison < 2 s.

    .venv/bin/python -m benchmarks.runs_list_speed [--runs 10000] [--rows-per-run 500] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db.models import RequestResult, Run, run_fingerprint
from db.session import dispose_all, get_session_factory, session_scope
from services import runs
from services.runs import display

REPO_ROOT = Path(__file__).resolve().parent.parent

ENGINES = ["vllm", "sglang", "llamacpp-4slot", "llamacpp-1slot", "trtllm", "vllm-cpu", "tgi", "ollama"]
MODELS = ["SmolLM2-135M-Instruct", "Llama-3.1-8B-Instruct", "Qwen3-8B", "gpt-oss-20b"]
WORKLOADS = ["chat", "rag", "prefix-heavy", "long-context", "structured"]
TAGS = ["nightly", "h200", "a100", "regression", "demo", "prefix-cache", "release-0.11", "baseline"]
KINDS = ["benchmark"] * 14 + ["playground"] * 3 + ["recording"] + ["import"] * 2
ROWS_PER_RUN_DEFAULT = 500


def stats_block(rng: np.random.Generator, median: float) -> dict[str, float]:
    spread = rng.uniform(1.2, 2.5)
    return {
        "mean": median * 1.1,
        "p50": median,
        "p90": median * spread,
        "p95": median * spread * 1.1,
        "p99": median * spread * 1.4,
        "min": median * 0.4,
        "max": median * spread * 2,
    }


def generate(path: Path, run_count: int, rows_per_run: int) -> dict[str, float]:
    """Fill `path` with the history; returns how long each part took."""
    url = f"sqlite:///{path}"
    get_session_factory(url)  # schema, as the app creates it
    dispose_all()
    rng = np.random.default_rng(7)
    started = time.perf_counter()
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=DELETE")  # one big bulk load: no WAL file
    connection.execute("PRAGMA synchronous=OFF")
    now = datetime(2026, 11, 30, tzinfo=UTC)
    run_rows, tag_rows, engine_rows = [], [], []
    for run_id in range(1, run_count + 1):
        kind = KINDS[run_id % len(KINDS)]
        names = list(rng.choice(ENGINES, size=int(rng.integers(1, 4)), replace=False))
        model = MODELS[int(rng.integers(len(MODELS)))]
        workload = WORKLOADS[int(rng.integers(len(WORKLOADS)))]
        config = {
            "concurrency": int(rng.choice([1, 2, 4, 8, 16, 32])),
            "requests": rows_per_run,
            "output_tokens": 128,
            "workload": workload,
        }
        summary = (
            {
                "engines": {
                    name: {
                        "completed": rows_per_run - 2,
                        "failed": 0,
                        "sent": rows_per_run - 2,
                        "duration_s": 60.0,
                        "request_throughput_rps": float(rng.uniform(1, 50)),
                        "output_throughput_tok_s": float(rng.uniform(100, 5000)),
                        "ttft_s": stats_block(rng, float(rng.uniform(0.02, 0.5))),
                        "tpot_s": stats_block(rng, float(rng.uniform(0.005, 0.05))),
                        "e2e_s": stats_block(rng, float(rng.uniform(0.5, 5))),
                    }
                    for name in names
                },
                "sweep": [],
            }
            if kind in ("benchmark", "import")
            else {}
        )
        snapshots = [
            {
                "name": name,
                "base_url": f"http://gpu-{i}:8000",
                "kind": name.split("-")[0],
                "model": model,
                "version": "0.11.0",
                "info": {"max_model_len": 8192, "gpu_memory_utilization": 0.9},
            }
            for i, name in enumerate(names)
        ]
        tags = [t for t in TAGS if rng.random() < 0.15]
        created = now - timedelta(minutes=run_count - run_id)
        run_rows.append(
            (
                run_id,
                kind,
                f"{kind} {run_id}: {', '.join(names)}",
                "finished",
                json.dumps(config),
                json.dumps(summary),
                json.dumps(snapshots),
                ",".join(names),
                model,
                workload,
                1.0,
                "",
                json.dumps(tags),
                run_fingerprint(kind, model, workload, config),
                int(rng.random() < 0.05),
                created.strftime("%Y-%m-%d %H:%M:%S.%f"),
            )
        )
        tag_rows.extend((run_id, tag) for tag in tags)
        engine_rows.extend((run_id, position, name, len(names)) for position, name in enumerate(names))
    connection.executemany(
        "INSERT INTO runs (id, kind, name, status, config, summary, engines, engine_names, model, workload, progress,"
        " notes, tags, config_fingerprint, archived, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        run_rows,
    )
    connection.executemany("INSERT INTO run_tags (run_id, tag) VALUES (?, ?)", tag_rows)
    connection.commit()
    runs_done = time.perf_counter()
    connection.execute(
        "CREATE TEMP TABLE bench_engines (run_id INTEGER, pos INTEGER, name TEXT, n INTEGER)"
    )
    connection.executemany("INSERT INTO bench_engines VALUES (?,?,?,?)", engine_rows)
    connection.execute("CREATE INDEX temp.bench_engines_run ON bench_engines (run_id, pos)")
    # Every row of every run, generated inside SQLite: 5,000,000 rows in one statement.
    connection.execute(
        f"""
        WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < {rows_per_run - 1})
        INSERT INTO request_results (run_id, engine_name, "index", warmup, ok, scheduled_s, start_s, ttft_s, e2e_s,
                                     tpot_s, itl_s, input_tokens, output_tokens, cached_tokens, extra)
        SELECT r.id, e.name, seq.i, seq.i < 2, (abs(random()) % 100) != 0, seq.i * 0.1, seq.i * 0.1 + 0.001,
               0.02 + (abs(random()) % 400000) / 1000000.0,
               0.6 + (abs(random()) % 3000000) / 1000000.0,
               0.005 + (abs(random()) % 40000) / 1000000.0,
               '[]', 512, 128, 0, '{{}}'
        FROM runs AS r CROSS JOIN seq JOIN bench_engines AS e ON e.run_id = r.id AND e.pos = seq.i % e.n
        """
    )
    connection.commit()
    rows_done = time.perf_counter()
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("ANALYZE")
    connection.close()
    return {
        "runs_s": runs_done - started,
        "rows_s": rows_done - runs_done,
        "analyze_s": time.perf_counter() - rows_done,
    }


def add_heavy_runs(path: Path, count: int, rows: int) -> list[int]:
    """`count` more single-engine benchmark runs of `rows` requests each (long benchmarks)."""
    connection = sqlite3.connect(path)
    first = connection.execute("SELECT max(id) FROM runs").fetchone()[0] + 1
    ids = list(range(first, first + count))
    for run_id in ids:
        connection.execute(
            "INSERT INTO runs (id, kind, name, status, config, summary, engines, engine_names, model, workload, progress,"
            " notes, tags, archived, created_at) SELECT ?, kind, 'heavy ' || ?, status, config, summary, engines,"
            " engine_names, model, workload, progress, notes, tags, 0, created_at FROM runs"
            " WHERE kind = 'benchmark' AND engine_names NOT LIKE '%,%' ORDER BY id DESC LIMIT 1",
            (run_id, run_id),
        )
        connection.execute(
            f"""
            WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < {rows - 1})
            INSERT INTO request_results (run_id, engine_name, "index", warmup, ok, ttft_s, e2e_s, tpot_s, itl_s,
                                         input_tokens, output_tokens, extra)
            SELECT ?, (SELECT engine_names FROM runs WHERE id = ?), seq.i, 0, 1,
                   0.02 + (abs(random()) % 400000) / 1000000.0, 0.6 + (abs(random()) % 3000000) / 1000000.0,
                   0.005 + (abs(random()) % 40000) / 1000000.0, '[]', 512, 128, '{{}}'
            FROM seq
            """,
            (run_id, run_id),
        )
    connection.commit()
    connection.close()
    return ids


def timed(action: Callable[[], object], repeats: int = 5) -> tuple[float, float]:
    """(first call, median of the following calls) in seconds."""
    start = time.perf_counter()
    action()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return first, statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rows-per-run", type=int, default=ROWS_PER_RUN_DEFAULT)
    parser.add_argument("--keep", help="generate into (or reuse) this folder instead of a temporary one")
    parser.add_argument(
        "--heavy-rows",
        type=int,
        default=250_000,
        help="afterwards, also compare 4 extra runs of this many requests each (0: skip)",
    )
    args = parser.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="shootout-runs-speed-"))
    folder.mkdir(parents=True, exist_ok=True)
    database = folder / "shootout.db"
    os.environ["SHOOTOUT_DATA_DIR"] = str(folder)
    os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{database}"
    os.environ["SHOOTOUT_NO_AUTOREFRESH"] = "1"
    try:
        if not database.exists():
            print(
                f"generating {args.runs:,} runs x {args.rows_per_run} request rows in {database} ...",
                flush=True,
            )
            parts = generate(database, args.runs, args.rows_per_run)
            print(
                "  runs {runs_s:.1f} s, request rows {rows_s:.1f} s, analyze {analyze_s:.1f} s".format(
                    **parts
                )
            )

        with session_scope() as session:
            run_total = session.scalar(select(func.count(Run.id)))
            row_total = session.scalar(select(func.count(RequestResult.id)))
            compared = list(
                session.scalars(
                    select(Run.id)
                    .where(Run.kind == "benchmark", Run.engine_names.not_like("%,%"))
                    .order_by(Run.id.desc())
                    .limit(4)
                )
            )
        size_mb = database.stat().st_size / 1024**2
        print(f"database: {run_total:,} runs, {row_total:,} request rows, {size_mb:,.0f} MiB")

        figures: list[tuple[str, float, float, float | None]] = []

        def measure(
            label: str, action: Callable[[], object], target: float | None = None, repeats: int = 5
        ) -> None:
            first, median = timed(action, repeats)
            figures.append((label, first, median, target))

        measure("list: first page (25 of all)", lambda: runs.list_runs(page_size=25), 1.0)
        measure(
            "list: engine + tag + kind filter",
            lambda: runs.list_runs(
                runs.RunFilter(kinds=("benchmark",), engine="vllm", tag="nightly"), page_size=25
            ),
            1.0,
        )
        measure(
            "list: text search in names/notes",
            lambda: runs.list_runs(runs.RunFilter(text="sglang"), page_size=25),
            1.0,
        )
        measure("list: page 300 of 400", lambda: runs.list_runs(page=300, page_size=25), 1.0)
        measure("filter options (distinct values)", runs.filter_options, 1.0)
        measure(f"compare 4 runs (service) {compared}", lambda: display.comparison_view(compared), 2.0)

        page = str(REPO_ROOT / "app_pages" / "runs.py")

        def render(**query: str) -> None:
            at = AppTest.from_file(page, default_timeout=120)
            for key, value in query.items():
                at.query_params[key] = value
            at.run()
            assert not at.exception, at.exception

        measure("Runs page rendered (AppTest), history", render, 1.0, repeats=3)
        measure(
            "Runs page rendered (AppTest), 4-run compare",
            lambda: render(compare=",".join(map(str, compared))),
            2.0,
            repeats=3,
        )

        if args.heavy_rows:
            heavy = add_heavy_runs(database, 4, args.heavy_rows)
            measure(
                f"compare 4 runs of {args.heavy_rows:,} requests each (service)",
                lambda: display.comparison_view(heavy),
                None,
                repeats=3,
            )
            measure(
                f"compare 4 runs of {args.heavy_rows:,} requests each (AppTest)",
                lambda: render(compare=",".join(map(str, heavy))),
                None,
                repeats=2,
            )
            for run_id in heavy:  # leave the kept database at its stated size
                runs.delete_run(run_id)

        width = max(len(label) for label, *_ in figures)
        print(f"\n{'what':<{width}}  {'first':>8}  {'median':>8}  target")
        for label, first, median, target in figures:
            verdict = "" if target is None else ("ok" if median < target else "SLOW")
            goal = f"< {target:g} s {verdict}" if target else ""
            print(f"{label:<{width}}  {first * 1000:>6.0f}ms  {median * 1000:>6.0f}ms  {goal}")
        print("\nfirst = first call in this process (cold caches); median = of the next calls.")
    finally:
        if not args.keep:
            dispose_all()
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
