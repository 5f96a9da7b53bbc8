"""What live telemetry costs: 8 GPUs (fake NVML) and 4 engines sampled at 4 Hz.

The engines are loopback HTTP servers in a child process (their cost is the engines', not
ours) that serve real exposition text (the vLLM CPU capture, the vLLM 0.33, SGLang and
llama.cpp fixtures) with every counter and histogram value growing on each read, as on a
busy server, so nothing can be cached between reads. The figure is this process's CPU
time (all threads: scrapes, parsing, normalising, NVML, the hub) over wall time.

    .venv/bin/python -m benchmarks.telemetry_sampling_cost [--seconds 30] [--rate 4] [--record]

--record also writes every sample to a SQLite database (the recorder), as a recording does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from db.models import Run
from db.session import session_scope
from services.telemetry.gpu import NvmlSampler
from services.telemetry.hub import TelemetryHub
from services.telemetry.recorder import start_recording
from services.telemetry.scraper import ScrapeTarget
from tests.services.telemetry.fake_pynvml import FakeGpu, FakeProcess, make_fake_pynvml

ROOT = Path(__file__).resolve().parent.parent

FIXTURES = ROOT.parent / "shared" / "fixtures" / "metrics"
ENGINES = [
    ("vllm-real", "vllm", "vllm_cpu_0.32_real.txt"),
    ("vllm-033", "vllm", "vllm.txt"),
    ("sglang", "sglang", "sglang.txt"),
    ("llamacpp", "llamacpp", "llamacpp.txt"),
]

SERVER = r"""
import sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GROWING = ("_total", "_bucket", "_count", "_sum")

def template(text):
    lines = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            lines.append((line, None))
            continue
        head, _, value = line.rpartition(" ")
        name = head.split("{", 1)[0]
        lines.append((head, float(value)) if name.endswith(GROWING) else (line, None))
    return lines

def serve(index, path, ready):
    lines = template(open(path).read())
    started = time.monotonic()
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as uvicorn and llama.cpp's server do
        def do_GET(self):
            factor = 1.0 + (time.monotonic() - started) * 0.05  # every counter grows, every read
            out = []
            for head, value in lines:
                out.append(head if value is None else f"{head} {value * factor + (time.monotonic() - started)}")
            body = ("\n".join(out) + "\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ready[index] = server.server_address[1]
    server.serve_forever()

ports = {}
for index, path in enumerate(sys.argv[1:]):
    threading.Thread(target=serve, args=(index, path, ports), daemon=True).start()
while len(ports) < len(sys.argv) - 1:
    time.sleep(0.01)
print(" ".join(str(ports[i]) for i in range(len(ports))), flush=True)
sys.stdin.read()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=4.0, help="samples per second")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--record", action="store_true", help="also write samples to SQLite")
    args = parser.parse_args()

    sys.modules["pynvml"] = make_fake_pynvml(
        gpus=[
            FakeGpu(processes=[FakeProcess(100 + i, 2**30), FakeProcess(200 + i, 2**31)])
            for i in range(args.gpus)
        ]
    )

    child = subprocess.Popen(
        [sys.executable, "-c", SERVER, *[str(FIXTURES / f) for _, _, f in ENGINES]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ports = [int(p) for p in child.stdout.readline().split()]  # type: ignore[union-attr]
        targets = [
            ScrapeTarget(
                name, kind, f"http://127.0.0.1:{port}/metrics", base_url=f"http://127.0.0.1:{port}"
            )
            for (name, kind, _), port in zip(ENGINES, ports, strict=True)
        ]
        hub = TelemetryHub(NvmlSampler())
        hub.sample(targets, gpus=True)  # warm: connections, NVML handles, imports

        recorder = None
        if args.record:
            folder = tempfile.mkdtemp(prefix="telemetry-bench-")
            os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{folder}/bench.db"

            with session_scope() as session:
                run = Run(
                    kind="recording",
                    name="bench",
                    status="running",
                    started_at=datetime.now(UTC),
                )
                session.add(run)
                session.flush()
                run_id = run.id

        interval = 1.0 / args.rate
        errors = 0
        samples = 0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        if args.record:
            recorder = start_recording(run_id, targets, gpus=True, interval_s=interval, hub=hub)
            time.sleep(args.seconds)
            info = recorder.stop()
            samples = info.samples_written
            errors = 0 if info.last_error is None else 1
        else:
            next_tick = time.monotonic()
            deadline = next_tick + args.seconds
            while next_tick < deadline:
                for snapshot in hub.sample(targets, gpus=True):
                    samples += 1
                    errors += snapshot.error is not None
                next_tick += interval
                time.sleep(max(0.0, next_tick - time.monotonic()))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        hub.close()
    finally:
        child.stdin.close()  # type: ignore[union-attr]
        child.wait(timeout=10)

    ticks = wall * args.rate
    print(
        f"sources: {len(targets)} engines + {args.gpus} GPUs (fake NVML), {args.rate:g} Hz, {wall:.1f} s"
        f"{', recording to SQLite' if args.record else ''}"
    )
    print(f"snapshots: {samples} ({samples / max(ticks, 1):.1f} per tick), errors: {errors}")
    print(
        f"CPU: {cpu:.3f} s over {wall:.1f} s = {100 * cpu / wall:.2f} % of one core "
        f"({1000 * cpu / max(ticks, 1):.2f} ms per tick)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
