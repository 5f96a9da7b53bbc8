"""The peer load generators, run as commands against the scripted server: NVIDIA AIPerf and
kubernetes-sigs inference-perf, each in a virtual environment of its own (their dependencies
clash with the app's):

    python -m venv /tmp/aiperf-venv && /tmp/aiperf-venv/bin/pip install aiperf==0.13.0
    python3.12 -m venv /tmp/infperf-venv && /tmp/infperf-venv/bin/pip install inference-perf==0.7.0

Each runner returns the command's whole process tree CPU (`run_tree`) and what the tool itself
says it did, read from its own report: completed requests, the server-reported output tokens and
its benchmark duration. A figure per token is only worth something when the tokens were really
streamed, and two traps made earlier figures wrong:
- AIPerf splits `--model` at commas (a list of models it round-robins), so the scripted
  server's scenario goes in its `x-scripted` header and the model is a plain name;
- inference-perf's chat data always asks for `max_tokens` 30 (its `mock` data; the generators
  with a length setting speak only the completions API), so its runs use the scripted server's
  `cap=0`, which streams the scenario's token count whatever the request asks.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / ".engines" / "models" / "smollm2-135m-instruct-hf"


TICKS = os.sysconf("SC_CLK_TCK")


def parent_and_cpu_s(pid: int | str) -> tuple[int, float]:
    """A process's parent pid and CPU seconds so far (user and system, /proc/PID/stat fields
    4, 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def _proc_table() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds so far) for every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            table[int(entry)] = parent_and_cpu_s(entry)
        except (OSError, IndexError):
            continue
    return table


def _ray_actor(pid: int) -> bool:
    """A Ray actor's process (Ray titles them `ray::ClassName...`): the hub and the load workers
    of a `--ray` run are children of a raylet, not of the command."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::")
    except OSError:
        return False


def run_tree(command: list[str], *, ray_actors: bool = False, **popen: object) -> float:
    """Run `command`; its whole process tree's CPU seconds. Waited-for children show in
    RUSAGE_CHILDREN, but a tool whose workers are not waited for (AIPerf's services) would
    hide theirs: so /proc is also sampled every 0.1 s and the larger figure is kept. With
    `ray_actors`, the Ray actor processes that run meanwhile count too (by the CPU they use
    during the command: the idle ones a cluster keeps warm use none to speak of)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = _proc_table() if ray_actors else {}
    process = subprocess.Popen(command, **popen)  # type: ignore[call-overload]
    seen: dict[int, float] = {}
    while process.poll() is None:
        table = _proc_table()
        family = {process.pid}
        changed = True
        while changed:
            changed = False
            for pid, (parent, _) in table.items():
                if parent in family and pid not in family:
                    family.add(pid)
                    changed = True
        if ray_actors:
            family |= {pid for pid in table if pid not in family and _ray_actor(pid)}
        for pid in family:
            if pid in table:
                already = started[pid][1] if pid in started else 0.0
                seen[pid] = max(seen.get(pid, 0.0), table[pid][1] - already)
        time.sleep(0.1)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    waited = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return max(waited, sum(seen.values()))


@dataclass(frozen=True)
class PeerLoad:
    """What a peer is asked to run: `requests` of `tokens` at `concurrency` against the
    scripted server's `scenario`, its artifacts under `folder`."""

    server: ScriptedServer
    scenario: str
    requests: int
    tokens: int
    concurrency: int
    folder: Path


@dataclass(frozen=True)
class PeerRun:
    cpu_s: float
    completed: int
    output_tokens: int
    duration_s: float

    @property
    def tok_s(self) -> float:
        return self.output_tokens / self.duration_s if self.duration_s else 0.0

    @property
    def req_s(self) -> float:
        return self.completed / self.duration_s if self.duration_s else 0.0


def aiperf(path: str, load: PeerLoad) -> PeerRun:
    artifacts = load.folder / f"aiperf-{load.requests}-{load.tokens}"
    command = [
        path,
        "profile",
        "--model",
        "scripted",
        "--header",
        json.dumps({"x-scripted": load.scenario}),
        "--url",
        load.server.root_url,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--concurrency",
        str(load.concurrency),
        "--request-count",
        str(load.requests),
        "--tokenizer",
        str(TOKENIZER),
        "--isl",
        "16",
        "--osl",
        str(load.tokens),
        "--ui",
        "none",
        "--artifact-dir",
        str(artifacts),
    ]
    used = run_tree(command, cwd=load.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = json.loads((artifacts / "profile_export_aiperf.json").read_text())
    completed = int(report["request_count"]["avg"])
    return PeerRun(
        cpu_s=used,
        completed=completed,
        output_tokens=int(report["usage_completion_tokens"]["sum"]),
        duration_s=float(report["benchmark_duration"]["avg"]),
    )


def inference_perf(path: str, load: PeerLoad) -> PeerRun:
    storage = load.folder / f"ip-{load.requests}-{load.tokens}"
    config = load.folder / f"ip-{load.requests}-{load.tokens}.yaml"
    config.write_text(
        "load:\n  type: concurrent\n  stages:\n"
        f"  - num_requests: {load.requests}\n    concurrency_level: {load.concurrency}\n"
        "api:\n  type: chat\n  streaming: true\n"
        f"server:\n  type: vllm\n  model_name: '{load.scenario},cap=0'\n"
        f"  base_url: {load.server.root_url}\n  ignore_eos: true\n"
        f"tokenizer:\n  pretrained_model_name_or_path: {TOKENIZER}\n"
        "data:\n  type: mock\n"
        "report:\n  request_lifecycle:\n    summary: true\n"
        f"storage:\n  local_storage:\n    path: {storage}\n"
    )
    used = run_tree(
        [path, "--config_file", str(config)],
        cwd=load.folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    report = json.loads((storage / "summary_lifecycle_metrics.json").read_text())
    successes = report["successes"]
    return PeerRun(
        cpu_s=used,
        completed=int(successes["count"]),
        output_tokens=int(successes["output_tokens"]["total"]),
        duration_s=float(report["benchmark_time_seconds"]),
    )
