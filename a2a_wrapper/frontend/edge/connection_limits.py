"""Deadlines and a cap on the connections uvicorn holds: uvicorn (0.55, httptools) has neither.

uvicorn arms its keep-alive timer only after a response, and any byte cancels it: a client that connects and
sends nothing, or trickles its headers a byte at a time, holds its connection forever. Its `limit_concurrency`
counts the connection asking (a limit of N lets N - 1 in) and answers in plain text.

This is uvicorn's httptools protocol (llhttp's C parser: per request a fraction of h11's CPU, which was 0.3 ms of a
trivial turn's) with one deadline for what the connection waits for from the client:

- the headers of a request: from the connection's start, and from the first byte of each later request on a
  kept-alive connection, until they are complete (`header_timeout`);
- the rest of a body nobody read (a route that ignores it, a 413): from the response, `body_timeout`;
- silence between requests stays uvicorn's keep-alive timer (`timeout_keep_alive`).

Headers still incomplete past 16 KiB get 400 and the connection closes (h11's bound: llhttp has none).

Past its deadline the connection closes. A close while the client is still sending lingers (`lingering_close`),
so the response sent before it is not lost to a reset. Reading a body the app wants is bounded in the app
(BodyLimit, which can still answer 408). Nothing bounds writing a response: a long SSE stream runs until it ends.
Connections are admitted per peer (admission.py): past a peer's share (`max_connections_per_peer`) or the whole
(`max_connections`), a few get 503 in the binding's shape for their request and are closed; the rest are closed
at once.
"""

import asyncio
import logging
from dataclasses import dataclass
from typing import ClassVar, Literal

import httptools
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from a2a_wrapper.frontend.edge.admission import DROP, UNKNOWN_PEER, Admission, Verdict, peer_of
from a2a_wrapper.frontend.edge.lingering_close import LingeringTransport
from a2a_wrapper.frontend.edge.refusal import BUSY, client_name, refuse

log = logging.getLogger(__name__)

Awaited = Literal["headers", "unread body"]
MAX_HEADER_BYTES = 16 * 1024  # what h11, uvicorn's other parser, holds of an incomplete request head


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    max_connections: int
    max_connections_per_peer: int


def limited_protocol(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol bound by `limits`, for `uvicorn.Config(http=…)` (which builds one per
    connection); the connections it serves are counted together, per peer."""

    class Limited(LimitedHttpToolsProtocol):
        connection_limits = limits
        admission = Admission(limits.max_connections, limits.max_connections_per_peer)

    return Limited


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    connection_limits: ClassVar[ConnectionLimits]
    admission: ClassVar[Admission]
    _peer: str = UNKNOWN_PEER
    _verdict: Verdict = DROP  # counted nowhere until the connection is admitted
    _awaited: Awaited | None = None
    _deadline: asyncio.TimerHandle | None = None
    _in_headers = True  # the headers of a request are awaited: the first one's from the connection's start
    _request_whole = False  # the request being answered has come whole, its body included
    _header_bytes = 0  # received while the headers being awaited are incomplete
    _reading_body_behind_head = False  # a new parser reads the head put before an unmade upgrade's body

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._lingering = LingeringTransport(transport, self._client_may_be_sending)
        super().connection_made(self._lingering)
        self._peer = peer_of(transport.get_extra_info("peername"))
        self._verdict = self.admission.admit(self._peer)
        if self._verdict.action == "drop":
            log.debug("closed a connection from %s at once: past its caps", client_name(self.client))
            transport.abort()  # no lingering, no answer: the descriptor is free now
            return
        if self._verdict.action == "refuse":
            self.app = self._refuse_busy  # answers this connection's request, then closes it
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.admission.release(self._peer, self._verdict)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering.lingering:
            return  # closed to the app: dropped
        self._unset_keepalive_if_required()
        self._feed(data)  # the parser's callbacks below run in here
        if self._in_headers and not self.transport.is_closing():
            self._header_bytes += len(data)
            if self._header_bytes > MAX_HEADER_BYTES:  # llhttp holds headers of any size: h11's bound, kept
                self.send_400_response("The request's headers are larger than 16 KiB.")
        self._watch()

    def _client_may_be_sending(self) -> bool:
        """A request is begun and not yet whole."""
        return self._header_bytes > 0 if self._in_headers else not self._request_whole

    def _feed(self, data: bytes) -> None:
        """uvicorn's `data_received` but for an upgrade it does not make (h2c, a WebSocket: this server speaks
        neither), which it leaves to llhttp, which then takes the request's body for the new protocol's bytes."""
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.logger.warning("Invalid HTTP request received.")
            self.send_400_response("Invalid HTTP request received.")
        except httptools.HttpParserUpgrade as upgrade:
            self._serve_without_upgrade(data[upgrade.args[0] :])

    def _serve_without_upgrade(self, rest: bytes) -> None:
        """Serves the request as HTTP/1.1, its body included, as RFC 9110 §7.8 lets a server ignore `Upgrade`: a new
        parser reads what followed its head, behind a head of its own that says how long the body is."""
        self.parser = httptools.HttpRequestParser(self)
        self.parser.set_dangerous_leniencies(lenient_data_after_close=True)  # as uvicorn's own parser
        head = _body_head(self.headers)
        if head is not None:
            self.cycle.more_body = True  # llhttp completed the request at its head
            self._request_whole = False
            self._reading_body_behind_head = True
            rest = head + rest
        self._feed(rest)

    def on_url(self, url: bytes) -> None:
        if not self._reading_body_behind_head:
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._reading_body_behind_head:
            super().on_header(name, value)

    def on_message_begin(self) -> None:
        if self._reading_body_behind_head:
            return  # the body's own head: the request and its cycle are the ones begun already
        super().on_message_begin()
        self._in_headers, self._request_whole, self._header_bytes = True, False, 0

    def on_headers_complete(self) -> None:
        self._in_headers = False
        if self._reading_body_behind_head:
            self._reading_body_behind_head = False  # what follows is the body, into the request's cycle
            return
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._request_whole = True
        super().on_message_complete()

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
        if self._in_headers:
            return "headers"  # the first request's, or a later one's begun on a kept-alive connection
        if self.cycle is not None and self.cycle.response_complete and not self._request_whole:
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
        log.info("refused a connection from %s: %s", client_name(self.client), self._verdict.why)
        await refuse(scope, send, BUSY, self._verdict.why, close=True)


def _body_head(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """A request head that gives a parser the length of the body that follows, from the request's own headers:
    None when the request has no body."""
    for name, value in headers:
        if name == b"transfer-encoding":
            return b"POST / HTTP/1.1\r\nTransfer-Encoding: " + value + b"\r\n\r\n"
    for name, value in headers:
        if name == b"content-length":
            return b"POST / HTTP/1.1\r\nContent-Length: " + value + b"\r\n\r\n"
    return None
