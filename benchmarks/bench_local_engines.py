"""Figures of each local engine on this machine (issue 30's table), one engine at a time:

- disk: the size of its virtual environment (the model they share is counted once, apart);
- start-up: from launch to a healthy answer (the engine is stopped first, then started);
- decode tok/s of one stream and of 4 concurrent streams on the same prompt (128 new tokens,
  temperature 0, ignore_eos where the engine takes it): output tokens / (E2E - TTFT), the
  `services.core.measure` figures of each request; for 4 streams, all their tokens over the wall time
  from the first token to the last;
- prefix cache: TTFT of a ~1,000-token prompt sent cold (a fresh nonce), then warm (same prompt);
- idle: CPU of all its processes over 20 s with no traffic, in % of one core, and their RSS.

Engines that the others would slow down are measured while the others are idle (never
generating). Install times come from `cli.py local install`, which logs each backend's time.

    .venv/bin/python -m benchmarks.bench_local_engines [ENGINE_ID ...] [--json]
    .venv/bin/python -m benchmarks.bench_local_engines --idle-all   # all running engines, together
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from services import local_engines
from services.client.records import ChatRequest
from services.client.running import run_chat
from services.engines import endpoints
from services.engines.base import SamplingParams
from services.engines.registry import get_adapter

TOKENS = 128
PROMPT = "Write a long story about a lighthouse keeper and the sea."


def _tree(pid: int) -> list[int]:
    """`pid`'s process group (engines run in a session of their own)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,pgid="], capture_output=True, text=True).stdout
    return [int(p) for p, g in (line.split() for line in out.splitlines()) if int(g) == pid]


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _du_gb(path: Path) -> float | None:
    if not path.exists():
        return None
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True).stdout
    return int(out.split()[0]) / 1024 / 1024


def _request(spec: local_engines.LocalEngineSpec, text: str, tokens: int) -> ChatRequest:
    adapter = get_adapter(spec.kind)
    params = SamplingParams(temperature=0.0, max_tokens=tokens, ignore_eos=adapter.supports_ignore_eos)
    return ChatRequest(
        base_url=f"http://127.0.0.1:{spec.port}/v1",
        model=local_engines.get_backend(spec.backend).served_model,
        messages=[{"role": "user", "content": text}],
        params=params,
        kind=spec.kind,
        extra_body=adapter.request_extras(params) or None,
        read_timeout_s=120,
    )


async def _decode(spec: local_engines.LocalEngineSpec, streams: int) -> float:
    results = await asyncio.gather(*(run_chat(_request(spec, PROMPT, TOKENS)) for _ in range(streams)))
    metrics = [r.metrics() for r in results if r.ok]
    if len(metrics) != streams:
        raise RuntimeError(f"{spec.id}: {[r.error for r in results if not r.ok]}")
    if streams == 1:
        m = metrics[0]
        assert m.e2e_s is not None and m.ttft_s is not None
        return m.output_tokens / (m.e2e_s - m.ttft_s)
    starts = [r.start + (m.ttft_s or 0) for r, m in zip(results, metrics, strict=True)]
    ends = [r.start + (m.e2e_s or 0) for r, m in zip(results, metrics, strict=True)]
    return sum(m.output_tokens for m in metrics) / (max(ends) - min(starts))


async def _prefix(spec: local_engines.LocalEngineSpec) -> tuple[float, float, int | None]:
    nonce = uuid.uuid4().hex
    words = " ".join(f"item{i} is {i * 7 % 13}" for i in range(200))
    text = f"[{nonce}] Remember these facts: {words}. Which item is 5?"
    cold = (await run_chat(_request(spec, text, 4))).metrics()
    warm = (await run_chat(_request(spec, text, 4))).metrics()
    assert cold.ttft_s and warm.ttft_s
    return cold.ttft_s, warm.ttft_s, warm.cached_tokens


def measure(spec: local_engines.LocalEngineSpec) -> dict[str, object]:
    local_engines.stop(spec.id)
    started = time.monotonic()
    local_engines.start(spec.id, wait=True, register=endpoints.register_local)
    startup = time.monotonic() - started
    status = local_engines.status(spec.id)[0]
    assert status.pid is not None
    asyncio.run(_decode(spec, 1))  # warm-up: first requests compile or allocate
    one = statistics.median(asyncio.run(_decode(spec, 1)) for _ in range(3))
    four = statistics.median(asyncio.run(_decode(spec, 4)) for _ in range(2))
    cold, warm, cached = asyncio.run(_prefix(spec))
    time.sleep(5)  # let the last request's work settle
    pids = _tree(status.pid)
    ticks = _cpu_ticks(pids)
    time.sleep(20)
    idle_pct = (_cpu_ticks(pids) - ticks) / os.sysconf("SC_CLK_TCK") / 20 * 100
    return {
        "engine": spec.id,
        "venv_gb": round(_du_gb(local_engines.engines_dir() / f"{spec.backend}-venv") or 0, 2),
        "startup_s": round(startup, 1),
        "decode_1_stream_tok_s": round(one, 1),
        "decode_4_streams_tok_s": round(four, 1),
        "prefix_ttft_cold_s": round(cold, 3),
        "prefix_ttft_warm_s": round(warm, 3),
        "prefix_ratio_cold_over_warm": round(cold / warm, 1),
        "prefix_cached_tokens": cached,
        "idle_cpu_pct_of_a_core": round(idle_pct, 1),
        "rss_mb": round(_rss_mb(pids)),
    }


def idle_all(seconds: float = 30.0) -> dict[str, object]:
    """Every running local engine left alone together: the whole set's CPU (% of one core) and
    RSS, what a laptop pays for keeping them all up."""
    groups = {s.id: _tree(s.pid) for s in local_engines.status() if s.status == "running" and s.pid}
    before = {engine: _cpu_ticks(pids) for engine, pids in groups.items()}
    time.sleep(seconds)
    per_engine = {
        engine: round((_cpu_ticks(pids) - before[engine]) / os.sysconf("SC_CLK_TCK") / seconds * 100, 2)
        for engine, pids in groups.items()
    }
    return {
        "engines": sorted(groups),
        "idle_cpu_pct_of_a_core": per_engine,
        "idle_cpu_pct_total": round(sum(per_engine.values()), 2),
        "rss_mb_total": round(sum(_rss_mb(pids) for pids in groups.values())),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--idle-all", action="store_true", help="all running engines idle together")
    args = parser.parse_args()
    if args.idle_all:
        print(json.dumps(idle_all(), indent=2))
        return 0
    chosen = [local_engines.get_spec(i) for i in args.ids] if args.ids else local_engines.specs()
    rows = []
    for spec in chosen:
        row = measure(spec)
        rows.append(row)
        if not args.json:
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    model = _du_gb(local_engines.hf_model_dir())
    if args.json:
        print(json.dumps({"engines": rows, "hf_model_gb": model}, indent=2))
    else:
        print(f"shared HF model folder: {model:.2f} GB" if model else "no HF model folder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
