"""The CI gate on a real engine: false alarms over repeats of one setup, and how often a 15%
lower output rate is caught (issue 43). Needs a running engine (`shootout local up
llamacpp-1slot`).

    .venv/bin/python -m benchmarks.gate_real_engine [--url http://127.0.0.1:8083] [--runs 21]

Runs `bench` RUNS times with one setup, each stored in one database, then judges each
consecutive pair at the README's checks (`ttft_p90:+10%,output_tok_s:-5%`) twice:
- fresh: a database holding just the two runs (what a CI job without a kept database sees:
  within-run intervals only);
- kept: the database holding every run (stored repeats of the setup judge).
The slower candidate is each pair's second run with its decode time stretched so that its
output rate is exactly 15% lower (TTFT untouched, so the output-rate check alone must catch
it): a real engine slowed by a known 15% cannot be made on a shared CPU, its own requests can.
Prints each pair's verdicts, the counts, the runs' output-rate spread and the load average.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from services.bench.results import EngineResults
from services.importers.common import summary_from_requests

ROOT = Path(__file__).resolve().parent.parent
README_CHECKS = "ttft_p90:+10%,output_tok_s:-5%"
DROP = 0.15


def cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SHOOTOUT_DATA_DIR": str(data_dir)}
    env.pop("SHOOTOUT_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "cli.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )


def checked(done: subprocess.CompletedProcess[str]) -> str:
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"cli.py exited {done.returncode}")
    return done.stdout


def bench(data_dir: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    checked(
        cli(
            data_dir,
            "bench",
            "--url",
            args.url,
            "--kind",
            args.kind,
            "--model",
            "smollm2",
            "--concurrency",
            str(args.concurrency),
            "--requests",
            str(args.requests),
            "--warmup",
            "1",
            "--input-len",
            str(args.input_len),
            "--output-len",
            str(args.output_len),
            "--json",
            str(out),
            "--quiet",
        )
    )
    return json.loads(out.read_text())


def exported(data_dir: Path, run_id: int, out: Path) -> dict[str, Any]:
    checked(cli(data_dir, "export", str(run_id), "--format", "json", "-o", str(out)))
    return json.loads(out.read_text())


def slower(document: dict[str, Any]) -> dict[str, Any]:
    """The run with each request's decode stretched by one factor so that the output rate
    (output tokens over the run's duration) is exactly 15% lower; TTFT kept."""
    doc = json.loads(json.dumps(document))
    rows = [r for r in doc["requests"] if r["ok"] and not r["warmup"]]
    engine, block = next(iter(doc["run"]["summary"]["engines"].items()))
    duration = block["duration_s"]
    decode = sum(r["e2e_s"] - r["ttft_s"] for r in rows)
    # The closed loop of concurrency 1: the run lasts its requests end to end, so the added
    # decode time adds to the duration one for one.
    added = duration / (1 - DROP) - duration
    factor = (decode + added) / decode
    for row in doc["requests"]:
        if row.get("ttft_s") is None or row.get("e2e_s") is None:
            continue
        row["e2e_s"] = row["ttft_s"] + (row["e2e_s"] - row["ttft_s"]) * factor
        if row.get("tpot_s") is not None:
            row["tpot_s"] *= factor
        row["itl_s"] = [gap * factor for gap in row.get("itl_s") or []]
    recomputed = summary_from_requests(
        [r for r in doc["requests"] if r["engine_name"] == engine], duration + added
    )
    stored = EngineResults.from_json(block)
    # What stretching the decode changed; the rest of the block (its counts, errors) as it was.
    doc["run"]["summary"]["engines"][engine] = replace(
        stored,
        duration_s=recomputed.duration_s,
        request_throughput_rps=recomputed.request_throughput_rps,
        input_throughput_tok_s=recomputed.input_throughput_tok_s,
        output_throughput_tok_s=recomputed.output_throughput_tok_s,
        total_token_throughput_tok_s=recomputed.total_token_throughput_tok_s,
        ttft_s=recomputed.ttft_s or stored.ttft_s,
        tpot_s=recomputed.tpot_s or stored.tpot_s,
        itl_s=recomputed.itl_s or stored.itl_s,
        e2e_s=recomputed.e2e_s or stored.e2e_s,
        reasoning_tok_s=recomputed.reasoning_tok_s or stored.reasoning_tok_s,
        answer_tok_s=recomputed.answer_tok_s or stored.answer_tok_s,
    ).to_json()
    doc["run"]["name"] = f"{doc['run']['name']} 15% slower"
    return doc


def imported(data_dir: Path, document: dict[str, Any], scratch: Path) -> int:
    path = scratch / f"import-{os.getpid()}-{len(list(scratch.iterdir()))}.json"
    path.write_text(json.dumps(document))
    return int(json.loads(checked(cli(data_dir, "import", str(path), "--json")))["run_ids"][0])


def gate(data_dir: Path, base: int, candidate: int) -> tuple[int, str]:
    # What is measured is the noise verdict: a busy host's client-bound runs would otherwise
    # read "not measured" (exit 4), a verdict of its own (docs/ci-gate.md, findings).
    done = cli(
        data_dir, "runs", "compare", str(base), str(candidate), "--fail-on", README_CHECKS,
        "--allow-untrusted",
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return done.returncode, (lines[-1] if lines else done.stderr.strip()[-200:])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8083")
    parser.add_argument("--kind", default="llamacpp")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--input-len", type=int, default=32)
    parser.add_argument("--output-len", type=int, default=16)
    args = parser.parse_args()
    if args.concurrency != 1:
        raise SystemExit("The 15% stretch assumes a closed loop of concurrency 1.")
    with tempfile.TemporaryDirectory(prefix="gate-real-") as tmp:
        work = Path(tmp)
        kept = work / "kept"
        kept.mkdir()
        scratch = work / "files"
        scratch.mkdir()
        runs: list[tuple[int, dict[str, Any]]] = []
        for index in range(args.runs):
            summary = bench(kept, args, scratch / f"bench-{index}.json")
            run_id = int(summary["run_id"])
            runs.append((run_id, exported(kept, run_id, scratch / f"run-{index}.json")))
            block = next(iter(summary["engines"].values()))
            print(
                f"run {run_id}: {block['completed']}/{block.get('sent')} completed, "
                f"{block.get('output_throughput_tok_s', 0):.1f} tok/s, "
                f"TTFT p90 {block['ttft_s']['p90'] * 1000:.1f} ms",
                flush=True,
            )
        rates = [
            next(iter(doc["run"]["summary"]["engines"].values()))["output_throughput_tok_s"]
            for _, doc in runs
        ]
        counts = {"fresh": 0, "kept": 0, "fresh caught": 0, "kept caught": 0}
        for (base_id, base_doc), (cand_id, cand_doc) in itertools.pairwise(runs):
            fresh = work / f"fresh-{cand_id}"
            fresh.mkdir()
            base_fresh, cand_fresh = (
                imported(fresh, base_doc, scratch),
                imported(fresh, cand_doc, scratch),
            )
            slow_doc = slower(cand_doc)
            slow_fresh = imported(fresh, slow_doc, scratch)
            kept_copy = work / f"kept-{cand_id}"
            shutil.copytree(kept, kept_copy)
            slow_kept = imported(kept_copy, slow_doc, scratch)
            verdicts = {
                "fresh": gate(fresh, base_fresh, cand_fresh),
                "kept": gate(kept, base_id, cand_id),
                "fresh caught": gate(fresh, base_fresh, slow_fresh),
                "kept caught": gate(kept_copy, base_id, slow_kept),
            }
            for key, (code, _) in verdicts.items():
                counts[key] += (code != 0) if "caught" not in key else (code == 1)
            print(
                f"{base_id} -> {cand_id}: same setup exit fresh {verdicts['fresh'][0]} kept "
                f"{verdicts['kept'][0]}; 15% slower exit fresh {verdicts['fresh caught'][0]} kept "
                f"{verdicts['kept caught'][0]} | {verdicts['fresh'][1][:110]}",
                flush=True,
            )
            shutil.rmtree(kept_copy)
        pairs = len(runs) - 1
        spread = (max(rates) - min(rates)) / statistics.median(rates) * 100
        print(
            json.dumps(
                {
                    "pairs": pairs,
                    "false_alarms_fresh": counts["fresh"],
                    "false_alarms_kept": counts["kept"],
                    "slower_caught_fresh": counts["fresh caught"],
                    "slower_caught_kept": counts["kept caught"],
                    "output_tok_s_median": round(statistics.median(rates), 1),
                    "output_tok_s_spread_pct": round(spread, 1),
                    "load_average": os.getloadavg(),
                    "setup": vars(args),
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
