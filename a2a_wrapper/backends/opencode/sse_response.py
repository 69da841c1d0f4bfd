"""One HTTP/1.1 response of server-sent events, read by an asyncio protocol as its bytes arrive.

OpenCode's `/event` stream was read through aiohttp: each read woke the reader's task, which took the bytes from a
StreamReader and iterated the events out through two async generators. Here the loop hands each read to
`data_received`: httptools (uvicorn's C parser, llhttp) takes the chunked framing off, the SSE splitter cuts the
events out, and each event's data goes to `on_event` in that same callback, with no task between the socket and
the turn's queue. The agent's CPU a wrapped trivial turn (~20 events) fell by 0.25 ms of 5.5 (bench/cpu_ab.py, -0.26,
-0.56, +0.05 per ABBA group); a second, idle aiohttp reader of the same stream had cost 0.4-1.0 ms a turn.

`on_event` says whether the event went to a turn that was waiting for it; then, while more events of the read are
in hand, the loop is handed over at once (the turn's first text crosses a2a-sdk's queues before the reader cuts
out the rest of the burst) and for HURRY after it; in a long read, every READ_SLICE. The rest of the read, and any
read that comes meanwhile, waits in hand for the loop's next pass, so events keep their order. Between two reads
the loop always runs what else is ready.
"""

import asyncio
from collections import deque
from collections.abc import Callable
from typing import cast

import httptools

from a2a_wrapper.backends.base import READ_SLICE
from a2a_wrapper.backends.opencode.json_http import MAX_HEAD, ResponseError
from a2a_wrapper.backends.opencode.sse_events import SseSplitter

HURRY = 0.003  # seconds after an eager delivery during which every event hands the loop over


class LoopShare:
    """When the reader hands the loop over, while more events of a read are in hand: at once and for HURRY after an
    urgent event, else once the read has held the loop for READ_SLICE."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock  # the loop's
        self._yielded = self._hurry_until = clock()

    def began(self) -> None:
        """A read came: the loop was the others' until now."""
        self._yielded = self._clock()

    def after(self, urgent: bool, more_ready: bool) -> bool:
        """Whether to hand the loop over before the next event in hand."""
        now = self._clock()
        if urgent:
            self._hurry_until = now + HURRY
        if more_ready and (now < self._hurry_until or now - self._yielded > READ_SLICE):
            self._yielded = now
            return True
        return False


class SseResponse(asyncio.Protocol):
    """Sends `request` on the connection it is made for, then hands each event's data of a 200 answer to
    `on_event` (True: it went to a waiting turn). `ended` is done when the answer is: with None when the server
    ended it, else with the error that ended it (a ResponseError for an answer that is not such a stream, an OSError
    for a lost connection, or what `fail` was given). A reader that stops waiting cancels it."""

    def __init__(self, request: bytes, on_event: Callable[[bytes], bool]) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._request = request
        self._on_event = on_event
        self._parser = httptools.HttpResponseParser(self)
        self._splitter = SseSplitter()
        self._share = LoopShare(loop.time)
        self._held: deque[bytes] = deque()  # events read and not handed over yet
        self._going_on = False  # a pass of the loop is awaited to hand over the rest of what is in hand
        self._end: BaseException | None = None  # how the answer ended, kept until the held events are handed over
        self._ending = False  # _end holds how it ended (None: the server ended the stream)
        self._heading = True  # still in the status line and headers
        self._transport: asyncio.Transport | None = None
        self.received = 0  # bytes, for a watch on the server's silence
        self.ended: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio's classes
        self._transport.write(self._request)

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        self._share.began()
        try:
            self._parser.feed_data(data)  # the read's events go to _held (on_body)
        except httptools.HttpParserError as exc:
            self.fail(ResponseError(f"not an HTTP/1.1 answer as expected: {exc}"))
            return
        if self._heading and self.received > MAX_HEAD:
            self.fail(ResponseError(f"the answer's head runs past {MAX_HEAD} bytes"))
        elif not self._going_on:  # else the read's events wait behind those in hand
            self._hand_over()

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish(exc or ConnectionResetError("the server closed the connection before the stream's end"))

    def fail(self, exc: BaseException) -> None:
        """Ends the answer with `exc` and closes the connection; events still in hand are not handed over."""
        self._held.clear()
        if not self.ended.done():
            self._end, self._ending = exc, True
            self._settle()
        if self._transport is not None:
            self._transport.close()

    # httptools' callbacks

    def on_headers_complete(self) -> None:
        self._heading = False
        status = self._parser.get_status_code()
        if status != 200:
            self.fail(ResponseError(f"the server answered {status} to the event stream's request"))

    def on_body(self, body: bytes) -> None:
        if not self.ended.done():
            self._held.extend(self._splitter.feed(body))

    def on_message_complete(self) -> None:
        self._finish(None)

    def _hand_over(self) -> None:
        """Hands the events in hand over one by one until the loop is to be handed over; the rest, and whatever
        the socket brings meanwhile, then waits for its next pass."""
        held = self._held
        while held:
            try:
                urgent = self._on_event(held.popleft())
            except Exception as exc:  # the stream's owner logs it and reads on from a new connection
                self.fail(exc)
                return
            if self._share.after(urgent, bool(held)):
                self._going_on = True
                self._loop.call_soon(self._go_on)
                return
        if self._ending:
            self._settle()

    def _go_on(self) -> None:
        self._going_on = False
        if not self.ended.done():
            self._hand_over()

    def _finish(self, exc: BaseException | None) -> None:
        if self.ended.done() or self._ending:
            return
        self._end, self._ending = exc, True
        if not self._held and not self._going_on:  # else once they are handed over
            self._settle()

    def _settle(self) -> None:
        if self.ended.done():  # cancelled: its reader stopped waiting, and the connection's end is no error
            return
        if self._end is None:
            self.ended.set_result(None)
        else:
            self.ended.set_exception(self._end)
