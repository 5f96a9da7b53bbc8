"""A stored benchmark run of many requests, written with bulk inserts (the way the importer
writes), for the export and import tests and benchmarks/bench_export_import_memory.py."""

from __future__ import annotations

import random

from sqlalchemy import insert

from db.models import RequestResult, Run
from db.session import session_scope

ENGINES = ("vllm-cpu", "llamacpp-4slot")


def request_rows(count: int, seed: int = 7, itl_gaps: int = 16) -> list[dict]:
    """`count` requests across two engines, one in 50 failed with a message a spreadsheet
    would run as a formula."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        ok = index % 50 != 49
        ttft = round(rng.uniform(0.02, 0.4), 6)
        gaps = [round(rng.uniform(0.005, 0.03), 6) for _ in range(itl_gaps)] if ok else []
        rows.append(
            {
                "engine_name": ENGINES[index % 2],
                "index": index // 2,
                "warmup": index < 4,
                "ok": ok,
                "scheduled_s": index * 0.01,
                "start_s": index * 0.01 + 0.001,
                "ttft_s": ttft if ok else None,
                "e2e_s": round(ttft + sum(gaps), 6) if ok else None,
                "tpot_s": round(sum(gaps) / len(gaps), 6) if gaps else None,
                "itl_s": gaps,
                "input_tokens": 128,
                "output_tokens": itl_gaps + 1 if ok else None,
                "cached_tokens": None,
                "finish_reason": "length" if ok else None,
                "error_class": None if ok else "HTTP 500",
                "error": None if ok else '=HYPERLINK("http://x","server said\nno")',
                "extra": {"step": 0},
            }
        )
    return rows


def make_big_run(count: int, batch: int = 5000) -> int:
    """A finished benchmark run with `count` per-request rows; its id."""
    with session_scope() as session:
        run = Run(
            kind="benchmark",
            name=f"big run of {count:,} requests",
            status="finished",
            config={"requests": count, "concurrency": 8},
            summary={"engines": {name: {"completed": count // 2} for name in ENGINES}, "sweep": []},
            engines=[{"name": name, "kind": "vllm", "model": "smollm2"} for name in ENGINES],
            engine_names=",".join(ENGINES),
            model="smollm2",
            workload="chat",
            tags=["big"],
            notes="n\n2",
        )
        session.add(run)
        session.flush()
        run_id = run.id
    for start in range(0, count, batch):
        rows = request_rows(min(batch, count - start), seed=start)
        for offset, row in enumerate(rows):
            row["index"] = (start + offset) // 2
        with session_scope() as session:
            session.execute(insert(RequestResult), [{**row, "run_id": run_id} for row in rows])
    return run_id
