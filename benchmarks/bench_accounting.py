"""Accounting against the engines' own counters (issue 4: completed + failed = sent, always;
output tokens equal the engine's own counters).

Runs a small benchmark on each real local engine (they must be up: `shootout local up`)
and compares the output tokens the run reports (from each answer's usage) with the increase
of the engine's generated-token counter over the run (vLLM `vllm:generation_tokens_total`,
llama.cpp `llamacpp:tokens_predicted_total`), and prompt tokens likewise. Anything else
using the engines at the same time shows up as a difference, so run it on idle engines.

    .venv/bin/python -m benchmarks.bench_accounting [--requests 16]
"""

from __future__ import annotations

import argparse
import os
import tempfile

import httpx2
from prometheus_client.parser import text_string_to_metric_families

from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.workloads import WorkloadSpec

ENGINES = {
    "vllm": (
        "http://127.0.0.1:8082",
        "vllm",
        "vllm:generation_tokens_total",
        "vllm:prompt_tokens_total",
    ),
    "llamacpp-1slot": (
        "http://127.0.0.1:8083",
        "llamacpp",
        "llamacpp:tokens_predicted_total",
        "llamacpp:prompt_tokens_total",
    ),
}


def counter(url: str, name: str) -> float:
    text = httpx2.get(url + "/metrics", headers={"Accept": "text/plain"}, timeout=10).text
    return sum(
        s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--output-len", type=int, default=24)
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    os.environ["SHOOTOUT_DATA_DIR"] = folder
    os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{folder}/accounting.db"

    for name, (url, kind, generated, prompt) in ENGINES.items():
        before = counter(url, generated), counter(url, prompt)
        spec = BenchSpec(
            engines=(EngineTarget(name, url, kind),),
            workload=WorkloadSpec(input_len=32, output_len=args.output_len),
            load=LoadSpec(concurrency=4, requests=args.requests),
            timeout_s=300,
            record_engine_metrics=False,
        )
        summary = jobs.execute_run(jobs.create_run(spec))
        after = counter(url, generated), counter(url, prompt)
        block = summary["engines"][name]
        print(
            f"{name:15s} sent {block['sent']} = completed {block['completed']} + failed {block['failed']}; "
            f"output tokens: run {block['output_tokens']}, engine counter +{after[0] - before[0]:.0f}; "
            f"prompt tokens: run {block['input_tokens']}, engine counter +{after[1] - before[1]:.0f}"
            + (" (llama.cpp counts only the uncached part)" if kind == "llamacpp" else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
