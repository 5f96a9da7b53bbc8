"""Open websockets by login session: a logout, "log out everywhere", a changed password or an
expired login reaches a page that is already open (issue 44).

Before, the login was checked when the websocket opened and never again: fragments and callbacks
acted for the viewer cached in the Streamlit session, so an operator-only button still worked
after "log out everywhere". Now the gate hands each password-login websocket to `LiveSocket`:

- every message from the browser (a rerun, a fragment's rerun, a widget's callback: each is one)
  is let through only while `access.read_session` still finds the login (a cheap lookup, cached
  for `access.SESSION_RECHECK_S`); else the websocket is closed with 1008 and the message dropped;
- a logout or "log out everywhere" in this process closes that session's (or every) websocket at
  once (`close_session`, `close_all`);
- a sweep every SWEEP_S closes the websockets whose login ended otherwise: expired, its password
  changed, or revoked by another server process sharing the database.

An OIDC login's websocket is handed over the same way, keyed by its login cookie's hash and
checked against the OIDC logouts (services/team/oidc_logins.py): Streamlit's own logout only
deletes the cookie in the browser that pressed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from services.team import access, oidc_logins

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

log = logging.getLogger("shootout.gate")

#: Seconds between checks of every open websocket's login.
SWEEP_S = 5.0
#: Policy violation: the login behind this websocket has ended.
CLOSE_CODE = 1008


def password_login_holds(token: str) -> bool:
    return access.read_session(token) is not None


def oidc_login_holds(key: str) -> bool:
    return not oidc_logins.ended(key)


class LiveSocket:
    """One websocket's receive and send, closed when its login ends. `token` names the login
    (a password login's cookie value, an OIDC login's key); `holds` says whether it still does
    (called in a thread: it may read the database)."""

    def __init__(
        self,
        token: str,
        receive: Receive,
        send: Send,
        holds: Callable[[str], bool] = password_login_holds,
    ) -> None:
        self.token = token
        self.holds = holds
        self._receive = receive
        self._send = send
        self._accepted = False
        self.closed = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "websocket.receive" and not self.closed and not await self._login_holds():
            await self.close()
            return {"type": "websocket.disconnect", "code": CLOSE_CODE}
        if message["type"] == "websocket.disconnect":
            sockets.discard(self)
        return message

    async def _login_holds(self) -> bool:
        try:
            found = await asyncio.to_thread(self.holds, self.token)
        except Exception as error:  # noqa: BLE001 - the database is unreachable: closed, not acted on (the page reconnects)
            log.warning("closed a websocket: its login could not be checked (%s)", error)
            return False
        if not found:
            log.info("closed a websocket whose login has ended")
        return found

    async def send(self, message: Message) -> None:
        if self.closed:
            if message["type"] == "websocket.accept":  # ended before it opened: refuse it
                await self._send({"type": "websocket.close", "code": CLOSE_CODE})
            return  # closed by us: what Streamlit still sends goes nowhere
        if message["type"] == "websocket.accept":
            self._accepted = True
        if message["type"] == "websocket.close":
            self.closed = True
            sockets.discard(self)
        await self._send(message)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        sockets.discard(self)
        if self._accepted:
            # The server's receive then answers Streamlit's handler with a disconnect, and
            # Streamlit ends its session as for any closed tab.
            with contextlib.suppress(Exception):  # the connection is already gone: nothing to close
                await self._send({"type": "websocket.close", "code": CLOSE_CODE})


class OpenSockets:
    """The open login websockets of this server process (its event loop only)."""

    def __init__(self) -> None:
        self._open: set[LiveSocket] = set()
        self._sweeper: asyncio.Task[None] | None = None

    def add(self, socket: LiveSocket) -> None:
        self._open.add(socket)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    def discard(self, socket: LiveSocket) -> None:
        self._open.discard(socket)

    def __len__(self) -> int:
        return len(self._open)

    async def close_session(self, token: str | None) -> int:
        """Close the websockets of this login (its cookie value); how many there were."""
        found = [s for s in list(self._open) if token and s.token == token]
        for socket in found:
            await socket.close()
        return len(found)

    async def close_all(self) -> int:
        found = list(self._open)
        for socket in found:
            await socket.close()
        return len(found)

    async def sweep_once(self) -> int:
        """Close the websockets whose login has ended; how many were closed."""
        closed = 0
        for token, holds in {(s.token, s.holds) for s in self._open}:
            if not await asyncio.to_thread(holds, token):
                closed += await self.close_session(token)
        if closed:
            log.info("closed %d websocket(s) whose login has ended", closed)
        return closed

    async def _sweep(self) -> None:
        while self._open:
            await asyncio.sleep(SWEEP_S)
            try:
                await self.sweep_once()
            except Exception:  # a database hiccup: logged, and the next sweep tries again
                log.exception("checking the open websockets' logins failed")


sockets = OpenSockets()
