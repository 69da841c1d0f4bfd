"""Deadlines and a cap on the connections uvicorn holds: uvicorn (0.54, h11) has neither.

uvicorn arms its keep-alive timer only after a response, and any byte cancels it: a client that connects and
sends nothing, or trickles its headers a byte at a time, holds its connection forever. Its `limit_concurrency`
counts the connection asking (a limit of N lets N - 1 in) and answers in plain text.

This is uvicorn's h11 protocol with one deadline for what the connection waits for from the client:

- the headers of a request: from the connection's start, and from the first byte of each later request on a
  kept-alive connection, until they are complete (`header_timeout`);
- the rest of a body nobody read (a route that ignores it, a 413): from the response, `body_timeout`;
- silence between requests stays uvicorn's keep-alive timer (`timeout_keep_alive`).

Past its deadline the connection closes. Reading a body the app wants is bounded in the app (BodyLimit, which
can still answer 408). Nothing bounds writing a response: a long SSE stream runs until it ends. A connection
opened while `max_connections` are open gets 503 in the binding's shape for its request, and is closed.
"""

import asyncio
import logging
from dataclasses import dataclass
from typing import ClassVar, Literal

import h11
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from a2a_wrapper.frontend.edge.refusal import BUSY, client_name, refuse

log = logging.getLogger(__name__)

Awaited = Literal["headers", "unread body"]


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    max_connections: int


def limited_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol bound by `limits`, for `uvicorn.Config(http=…)` (which builds one per connection)."""

    class Limited(LimitedH11Protocol):
        connection_limits = limits

    return Limited


class LimitedH11Protocol(H11Protocol):
    connection_limits: ClassVar[ConnectionLimits]
    _awaited: Awaited | None = None
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.connection_limits.max_connections:
            self.app = self._refuse_busy  # answers this connection's request, then closes it
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Arms the deadline for what the connection now awaits, unless it already runs for that."""
        awaited = self._awaiting()
        if awaited == self._awaited:
            return
        self._disarm()
        self._awaited = awaited
        if awaited is not None and not self.transport.is_closing():
            limits = self.connection_limits
            timeout = limits.header_timeout if awaited == "headers" else limits.body_timeout
            self._deadline = self.loop.call_later(timeout, self._expire, awaited, timeout)

    def _awaiting(self) -> Awaited | None:
        state = self.conn.their_state
        if state is h11.IDLE and (self.cycle is None or self.conn.trailing_data[0]):
            return "headers"  # the first request's, or a later one's begun on a kept-alive connection
        if state is h11.SEND_BODY and self.cycle is not None and self.cycle.response_complete:
            return "unread body"
        return None  # a request being served, or silence between requests (uvicorn's keep-alive timer)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._awaited = None

    def _expire(self, awaited: Awaited, timeout: float) -> None:
        self._deadline = None
        log.debug(
            "closing the connection from %s: %s not received within %s s", client_name(self.client), awaited, timeout
        )
        self.transport.close()

    async def _refuse_busy(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.connection_limits.max_connections
        log.info("refused a connection from %s: %d connections are open", client_name(self.client), limit)
        text = f"This server is holding its limit of {limit} open connections; try again shortly."
        await refuse(scope, send, BUSY, text, close=True)
