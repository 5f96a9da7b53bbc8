"""The scripted server with engine behaviours the demos need, for exact, known answers.

The scripted server (tests/support/scripted_server.py) times every request the same way;
a demo needs engines that behave differently: a prefix cache, a limited number of batch
slots, a KV cache that fills. This variant reads those from the model name, written
``OPTIONS|SCENARIO`` (SCENARIO is the scripted server's, e.g. ``ttft=400,itl=10``):

| option | meaning |
|---|---|
| tag=NAME | which emulated engine (each tag has its own cache, slots and metrics) |
| cache=F | prefix cache: a request whose leading messages were seen before gets TTFT x F and reports those messages' tokens as cached |
| slots=N | at most N requests generate at once; the others wait (counted as waiting) |
| kv=TOKENS | KV capacity: usage = tokens (prompt + n x answer) of running requests / TOKENS |
| preempt=1 | admitting a request that takes usage over 1 counts a preemption |

``/metrics?tag=NAME`` serves that engine's metrics in vLLM's names (running, waiting,
kv_cache_usage_perc, prefix_cache_queries/hits, num_preemptions).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.scripted_server import REPO_ROOT, Scenario, ScriptedHandler, ScriptedServer


@dataclass
class EngineState:
    seen: set[str] = field(default_factory=set)
    slots: asyncio.Semaphore | None = None
    running: int = 0
    waiting: int = 0
    kv_tokens: int = 0
    capacity: int = 0
    queries: int = 0
    hits: int = 0
    preemptions: int = 0


def _options(text: str) -> dict[str, str]:
    options = {}
    for part in text.split(","):
        key, _, value = part.strip().partition("=")
        if key:
            options[key] = value
    return options


def _message_tokens(message: Any) -> int:
    # The scripted server's own count: words + 4 per message.
    return len(str(message.get("content") or "").split()) + 4 if isinstance(message, dict) else 0


class DemoHandler(ScriptedHandler):
    def __init__(self) -> None:
        super().__init__(None)
        self.engines: dict[str, EngineState] = {}

    def state(self, tag: str, options: dict[str, str]) -> EngineState:
        state = self.engines.get(tag)
        if state is None:
            state = self.engines[tag] = EngineState()
            if options.get("slots"):
                state.slots = asyncio.Semaphore(int(options["slots"]))
        return state

    async def route(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
        received: float,
    ) -> bool:
        url = urlsplit(target)
        if method == "GET" and url.path == "/metrics" and url.query:
            tag = parse_qs(url.query).get("tag", [""])[0]
            return self._plain(
                writer, 200, self.engine_metrics(tag), "text/plain; version=0.0.4; charset=utf-8"
            )
        return await super().route(method, target, headers, body, writer, received)

    def engine_metrics(self, tag: str) -> str:
        s = self.engines.get(tag) or EngineState()
        label = f'model_name="{tag}"'
        usage = min(1.0, s.kv_tokens / s.capacity) if s.capacity else 0.0
        lines = []
        for name, kind, value in (
            ("vllm:num_requests_running", "gauge", s.running),
            ("vllm:num_requests_waiting", "gauge", s.waiting),
            ("vllm:kv_cache_usage_perc", "gauge", usage),
            ("vllm:prefix_cache_queries_total", "counter", s.queries),
            ("vllm:prefix_cache_hits_total", "counter", s.hits),
            ("vllm:num_preemptions_total", "counter", s.preemptions),
        ):
            lines += [
                f"# HELP {name} {name}",
                f"# TYPE {name.removesuffix('_total')} {kind}",
                f"{name}{{{label}}} {value}",
            ]
        return "\n".join(lines) + "\n"

    async def chat(
        self,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
        received: float,
        target: str,
    ) -> bool:
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return await super().chat(headers, body, writer, received, target)
        model = str(request.get("model") or "")
        if "|" not in model:
            return await super().chat(headers, body, writer, received, target)
        option_text, spec = model.split("|", 1)
        options = _options(option_text)
        state = self.state(options.get("tag", "default"), options)
        scenario = Scenario.parse(spec)
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        prompt_tokens = sum(_message_tokens(m) for m in messages)
        extra = []
        if "cache" in options:
            keys = [
                hashlib.sha256(json.dumps(messages[:k], sort_keys=True).encode()).hexdigest()
                for k in range(1, len(messages) + 1)
            ]
            matched = max((k + 1 for k, key in enumerate(keys) if key in state.seen), default=0)
            cached = sum(_message_tokens(m) for m in messages[:matched])
            state.seen.update(keys)
            state.queries += prompt_tokens
            state.hits += cached
            ttft = scenario.ttft * (float(options["cache"]) if cached else 1.0)
            extra += [f"ttft={ttft}", f"cached={cached}"]
        headers = {**headers, "x-scripted": ",".join([spec, *extra]) if spec else ",".join(extra)}
        n = int(request.get("n") or 1)
        max_tokens = request.get("max_tokens") or scenario.tokens
        need = prompt_tokens + n * min(int(max_tokens), scenario.tokens)
        if "kv" in options:
            state.capacity = int(options["kv"])
        state.waiting += 1
        try:
            if state.slots is not None:
                await state.slots.acquire()
        finally:
            state.waiting -= 1
        state.running += 1
        state.kv_tokens += need
        if options.get("preempt") == "1" and state.capacity and state.kv_tokens > state.capacity:
            state.preemptions += 1
        try:
            # The TTFT clock starts when a slot is free, as on an engine whose queue holds it.
            return await super().chat(headers, body, writer, time.perf_counter(), target)
        finally:
            state.running -= 1
            state.kv_tokens -= need
            if state.slots is not None:
                state.slots.release()


async def serve(host: str, port: int) -> None:
    handler = DemoHandler()
    server = await asyncio.start_server(handler.handle, host, port, backlog=2048, limit=2**20)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, server.close)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.host, args.port))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    return 0


class DemoServer(ScriptedServer):
    """The demo variant in a child process: `with DemoServer() as server: server.model(...)`."""

    def __init__(self) -> None:
        super().__init__(replay_dir=None)

    def start(self) -> DemoServer:
        import os

        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.services.demos.demo_server"],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"demo server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def engine_model(self, tag: str, scenario: str = "ttft=50,itl=5", **options: Any) -> str:
        option_text = ",".join([f"tag={tag}", *(f"{k}={v}" for k, v in options.items())])
        return f"{option_text}|{scenario}"

    def register(self, name: str, scenario: str = "ttft=50,itl=5", **options: Any) -> Any:
        """Register an emulated engine in the current test database (kind vllm, own metrics)."""
        from services.engines import endpoints

        return endpoints.add_engine(
            name,
            self.root_url,
            kind="vllm",
            model=self.engine_model(name, scenario, **options),
            metrics_url=f"{self.root_url}/metrics?tag={name}",
        )


if __name__ == "__main__":
    raise SystemExit(main())
