"""A server that answers every path, whatever the method, in one hostile way (issue 13:
nothing the product does may wait forever or fill memory). Runs in a process of its own.

| mode | what every request gets |
|---|---|
| endless | 200, an event stream of valid chat chunks (1 KiB of text each) that never ends |
| stall | 200 with Content-Length 1,000,000, 100 bytes, then silence for good |
| trickle | 200, chunked, one byte every 0.5 s, never finishing |
| huge | 200, chunked (no Content-Length to refuse early), 1 GiB as fast as loopback goes |
| huge_declared | 200 with Content-Length 1 GiB, the same bytes |

    python -m tests.support.hostile_server --mode endless   # prints the port
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Self

MODES = ("endless", "stall", "trickle", "huge", "huge_declared")
GIB = 1024 * 1024 * 1024
_CHUNK = (
    b'data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"'
    + b"w" * 1024
    + b'"},"finish_reason":null}]}\n\n'
)
_BLOCK = _CHUNK * 64


def _chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _handle(mode: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        if length:
            await reader.readexactly(length)
        if mode == "stall":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
                + b"{" * 100
            )
            await writer.drain()
            await asyncio.sleep(10**6)
        elif mode == "trickle":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            while True:
                writer.write(_chunked(b":"))
                await writer.drain()
                await asyncio.sleep(0.5)
        elif mode == "endless":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            while True:
                writer.write(_chunked(_BLOCK))
                await writer.drain()
        else:
            declared = mode == "huge_declared"
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + (
                    b"Content-Length: %d\r\n\r\n" % GIB
                    if declared
                    else b"Transfer-Encoding: chunked\r\n\r\n"
                )
            )
            sent = 0
            while sent < GIB:
                piece = _BLOCK[: GIB - sent]
                writer.write(piece if declared else _chunked(piece))
                await writer.drain()
                sent += len(piece)
            if not declared:
                writer.write(b"0\r\n\r\n")
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def _serve(mode: str, port: int) -> None:
    server = await asyncio.start_server(lambda r, w: _handle(mode, r, w), "127.0.0.1", port)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


class HostileServer:
    """Start one in a subprocess: `with HostileServer("stall") as server: server.url`."""

    def __init__(self, mode: str) -> None:
        assert mode in MODES, mode
        self.mode = mode
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    def __enter__(self) -> Self:
        root = Path(__file__).resolve().parents[2]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.hostile_server", "--mode", self.mode],
            cwd=root,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        asyncio.run(_serve(args.mode, args.port))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
