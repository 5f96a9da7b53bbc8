"""Shootout's `bench` and an engine's own benchmark, back to back on one local engine, A B A B:
concurrency 1, N requests of 64 tokens in and 32 out, each run on a cold prefix cache (SGLang's
`/flush_cache` before each; every run's prompts are new). Prints each run's TTFT and ITL p50 and
the ratios ours / theirs of the pairs, with the CPU seconds each tool's process tree used and
the machine's load average (the machine may be shared).

    .venv/bin/python -m benchmarks.agreement_peers --engine sglang [--rounds 3] [--requests 20]
    .venv/bin/python -m benchmarks.agreement_peers --engine vllm

`--ours-env K=V` sets an environment variable for our runs only (A/B of our own settings).
Peers: SGLang's `sglang.bench_serving` (its `sglang-oai-chat` backend: the same chat endpoint
as ours) and vLLM's `vllm.benchmarks.serve` (`openai-chat`), each in its engine's venv.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
ENGINES = Path(os.environ.get("SHOOTOUT_ENGINES_DIR", ROOT / ".engines"))
TOKENIZER = ENGINES / "models" / "smollm2-135m-instruct-hf"
PORTS = {"sglang": 8084, "vllm": 8082}

VLLM_MAIN = (
    "import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
    "from vllm.benchmarks.serve import add_cli_args, main; "
    "p = FlexibleArgumentParser(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))"
)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Runs a command to its end; (wall s, CPU s of its process tree)."""
    cpu, start = children_cpu_s(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"{command[0]} ... exited {done.returncode}")
    return time.perf_counter() - start, children_cpu_s() - cpu


def engine_itl(url: str) -> tuple[float, float]:
    """The engine's own inter-token latency so far (sum s, count), from its metrics: its
    inter-token histogram, else its per-request time per output token (SGLang's tokenizer
    manager times each request's tokens as they leave the scheduler): the engine's clock,
    whatever the client's timestamps."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as answer:
        text = answer.read(4_000_000).decode()
    found: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.endswith(("inter_token_latency_seconds", "time_per_output_token_seconds")):
            continue
        key = (
            "inter_token_latency_seconds"
            if "inter_token" in family.name
            else "time_per_output_token_seconds"
        )
        for sample in family.samples:
            for part, index in (("_sum", 0), ("_count", 1)):
                if sample.name.endswith(part):
                    found.setdefault(key, [0.0, 0.0])[index] += sample.value
    total, count = found.get("inter_token_latency_seconds") or found.get(
        "time_per_output_token_seconds", [0.0, 0.0]
    )
    return total, count


def flush(url: str, engine: str) -> None:
    if engine == "sglang":
        request = urllib.request.Request(f"{url}/flush_cache", method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            answer.read(4096)


def ours(url: str, engine: str, args: argparse.Namespace, out: Path) -> dict[str, float]:
    env = {**os.environ, "SHOOTOUT_DATA_DIR": str(out), **dict(v.split("=", 1) for v in args.ours_env)}
    env.pop("SHOOTOUT_DATABASE_URL", None)
    result = out / "ours.json"
    wall, cpu = run(
        [
            sys.executable,
            "cli.py",
            "bench",
            "--url",
            url,
            "--kind",
            engine,
            "--model",
            "smollm2",
            "--concurrency",
            "1",
            "--requests",
            str(args.requests),
            "--warmup",
            "1",
            "--input-len",
            "64",
            "--output-len",
            "32",
            "--no-engine-metrics",
            "--json",
            str(result),
            "--quiet",
        ],
        env,
    )
    block = next(iter(json.loads(result.read_text())["engines"].values()))
    generator = block.get("generator") or {}
    return {
        "ttft_p50_ms": block["ttft_s"]["p50"] * 1000,
        "itl_p50_ms": block["itl_s"]["p50"] * 1000,
        "itl_mean_ms": block["itl_s"]["mean"] * 1000,
        "completed": block["completed"],
        "wall_s": wall,
        "cpu_s": cpu,
        "loop_lag_p99_ms": (generator.get("loop_lag_ms") or {}).get("p99") or 0.0,
    }


def theirs(url: str, engine: str, args: argparse.Namespace, out: Path) -> dict[str, float]:
    result = out / "theirs.json"
    common = [
        "--base-url",
        url,
        "--model",
        "smollm2",
        "--tokenizer",
        str(TOKENIZER),
        "--num-prompts",
        str(args.requests),
        "--max-concurrency",
        "1",
        "--random-input-len",
        "64",
        "--random-output-len",
        "32",
        "--random-range-ratio",
        # Fixed lengths: SGLang samples in [ratio * len, len], vLLM in [(1 - ratio) * len, (1 + ratio) * len].
        "1.0" if engine == "sglang" else "0.0",
    ]
    if engine == "sglang":
        python = ENGINES / "sglang-venv" / "bin" / "python"
        command = [
            str(python),
            "-m",
            "sglang.bench_serving",
            "--backend",
            "sglang-oai-chat",
            "--dataset-name",
            "random-ids",
            "--warmup-requests",
            "1",
            "--disable-tqdm",
            "--output-file",
            str(result),
            *common,
        ]
    else:
        python = ENGINES / "vllm-venv" / "bin" / "python"
        command = [
            str(python),
            "-c",
            VLLM_MAIN,
            "--backend",
            "openai-chat",
            "--endpoint",
            "/v1/chat/completions",
            "--dataset-name",
            "random",
            "--ignore-eos",
            "--num-warmups",
            "1",
            "--save-result",
            "--result-dir",
            str(out),
            "--result-filename",
            result.name,
            *common,
        ]
    wall, cpu = run(command, {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    data = json.loads(result.read_text().strip().splitlines()[-1])
    return {
        "ttft_p50_ms": data["median_ttft_ms"],
        "itl_p50_ms": data["median_itl_ms"],
        "itl_mean_ms": data["mean_itl_ms"],
        "completed": data["completed"],
        "wall_s": wall,
        "cpu_s": cpu,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(PORTS), default="sglang")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--ours-env", action="append", default=[])
    parser.add_argument("--tools", default="ours,theirs", help="which to run each round, in order")
    args = parser.parse_args()
    url = f"http://127.0.0.1:{PORTS[args.engine]}"
    pairs = []
    for round_ in range(args.rounds):
        tools = {"ours": ours, "theirs": theirs}
        for who, measure in ((name, tools[name]) for name in args.tools.split(",")):
            with tempfile.TemporaryDirectory(prefix="agreement-") as scratch:
                flush(url, args.engine)
                before = engine_itl(url)
                figures = measure(url, args.engine, args, Path(scratch))
                after = engine_itl(url)
            # The engine's own mean ITL over the run (its warm-up request included).
            if after[1] > before[1]:
                figures["engine_itl_mean_ms"] = 1000 * (after[0] - before[0]) / (after[1] - before[1])
            figures["load"] = os.getloadavg()[0]
            print(
                f"round {round_} {who:6s} " + json.dumps({k: round(v, 3) for k, v in figures.items()}),
                flush=True,
            )
            pairs.append((round_, who, figures))
    for metric in ("ttft_p50_ms", "itl_p50_ms", "itl_mean_ms", "engine_itl_mean_ms"):
        ratios = [a[2][metric] / b[2][metric] for a, b in zip(pairs[0::2], pairs[1::2]) if b[2][metric]]
        print(
            f"{metric}: ours/theirs "
            + ", ".join(f"{r:.3f}" for r in ratios)
            + f" (median {statistics.median(ratios):.3f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
