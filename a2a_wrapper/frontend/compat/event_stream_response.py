"""a2a-sdk's SSE streams (JSON-RPC and REST) served with one helper task instead of sse-starlette's four.

a2a-sdk answers every streaming request with sse-starlette's `EventSourceResponse`, which runs each stream in an
anyio task group of four tasks (the events, the pings, the client's disconnect, the server's exit signal) and
opens a cancel scope around every chunk it sends: 0.56 ms of CPU for a seven-event stream, against 0.013 ms for
Starlette's plain `StreamingResponse` (measured on ASGI calls without a server). `EventStream` keeps the SDK's
response — its headers, its encoding of each event, its pings and their interval — and streams it in the
request's own task, with one task beside it that reads from the client: its disconnect ends the stream (the
events' generator is cancelled where it waits, so the SDK's subscription ends at once, as sse-starlette does it),
and while nothing else arrives it sends the pings.

The server's exit ends the open streams as sse-starlette ends them (when its `AppStatus` says so, or the uvicorn
server that installed the signal handlers is exiting), each with its closing chunk, but by one task per event
loop for all of them, running only while a stream is open. (`a2a-wrap serve` installs its own handlers and ends
its turns first, so each stream has its final event before that; agent.py.) A response built with anything this
does not do (a send timeout, a data sender, a close handler, a cooperative shutdown event or grace, a WebSocket
scope, a HEAD request) is served by sse-starlette itself.

Each event leaves with the `id:` the request handler gave it (frontend/handler/resumable_streams.py): the handler's
stream runs in this same task, as the SDK's route generators pull it, so the id it sets in `EVENT_ID` for an event
is there when that event reaches the writer.
"""

import asyncio
import logging
import signal
import weakref
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, ClassVar

from a2a.server.routes import common
from sse_starlette.event import ServerSentEvent, ensure_bytes
from sse_starlette.sse import AppStatus, EventSourceResponse
from starlette.types import Receive, Scope, Send

log = logging.getLogger(__name__)

EVENT_ID: ContextVar[str | None] = ContextVar("sse_event_id", default=None)  # the id of the event last yielded
EXIT_POLL = 0.5  # seconds between looks at whether the server is exiting, as sse-starlette's watcher


class EventStream(EventSourceResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._plain(scope):
            await super().__call__(scope, receive, send)
            return
        streaming = asyncio.current_task()
        assert streaming is not None  # an ASGI app runs in a task
        self._ended_by: str | None = None
        lock = asyncio.Lock()
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        self._response_started = True
        listener = asyncio.create_task(self._listen(receive, send, lock, streaming), name="sse-client")
        exits = _ExitWatch.of_this_loop()
        exits.add(self, streaming)
        try:
            async for data in self.body_iterator:
                chunk = ensure_bytes(_with_event_id(data), self.sep)
                async with lock:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            async with lock:
                self.active = False  # from here nothing cancels the stream: its closing send must go out
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            self._response_complete = True
        except asyncio.CancelledError:
            if self._ended_by is None or streaming.uncancel() > 0:
                raise  # cancelled by the server or a caller, not (only) by the client's going or the exit
        finally:
            self.active = False
            exits.discard(self)
            listener.cancel()
            await _closed(self.body_iterator)
        if self._ended_by == "exit":
            await self._send_end(send)
        if self.background is not None:
            await self.background()

    def end(self, streaming: asyncio.Task[None], by: str) -> None:
        """Ends the stream where it waits (its events' generator is cancelled there), unless it is ending already."""
        if self.active:
            self.active = False
            self._ended_by = by
            self._client_disconnected = by == "client"
            streaming.cancel()

    async def _send_end(self, send: Send) -> None:
        """The closing chunk of a stream the server's exit cut short, so that the client sees an end, not a drop."""
        try:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            self._response_complete = True
        except OSError:
            pass  # best effort: the peer may have gone already

    def _plain(self, scope: Scope) -> bool:
        """Whether this response needs nothing beyond what `__call__` here does."""
        return (
            scope["type"] == "http"
            and scope["method"] != "HEAD"  # sse-starlette answers headers only, without starting the stream
            and self.send_timeout is None
            and self.data_sender_callable is None
            and self.client_close_handler_callable is None
            and self._shutdown_event is None
            and self._shutdown_grace_period == 0
        )

    async def _listen(self, receive: Receive, send: Send, lock: asyncio.Lock, streaming: asyncio.Task[None]) -> None:
        """Until the client goes away, then cancel the stream; a ping after each quiet interval meanwhile."""
        interval = self.ping_interval if self.ping_interval > 0 else None
        while self.active:
            try:
                async with asyncio.timeout(interval):
                    message = await receive()
            except TimeoutError:
                try:
                    await self._send_ping(send, lock)
                except Exception:  # the connection is gone under the ping: as a disconnect
                    log.debug("a ping failed: ending the stream", exc_info=True)
                    message = {"type": "http.disconnect"}
                else:
                    continue
            if message["type"] == "http.disconnect":
                self.end(streaming, "client")
                return

    async def _send_ping(self, send: Send, lock: asyncio.Lock) -> None:
        factory = self.ping_message_factory
        ping = factory() if factory else ServerSentEvent(comment=f"ping - {datetime.now(UTC)}", sep=self.sep)
        async with lock:
            if self.active:
                await send({"type": "http.response.body", "body": ensure_bytes(ping, self.sep), "more_body": True})


def _with_event_id(data: Any) -> Any:
    """The SDK's item (a dict of SSE fields on JSON-RPC, a ServerSentEvent on REST) with its event's id, once."""
    event_id = EVENT_ID.get()
    if event_id is None:
        return data
    EVENT_ID.set(None)
    if isinstance(data, dict) and "id" not in data:
        return {**data, "id": event_id}
    if isinstance(data, ServerSentEvent) and data.id is None:
        data.id = event_id
    return data


class _ExitWatch:
    """The open streams of one event loop, and while any is open one task that ends them all when the server
    exits, as sse-starlette's shared watcher does: when `AppStatus.should_exit` is set (uvicorn's `handle_exit`,
    which sse-starlette patches) or the uvicorn server whose signal handler is installed is exiting."""

    _of_loop: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, "_ExitWatch"]] = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self._streams: dict[EventStream, asyncio.Task[None]] = {}
        self._watching: asyncio.Task[None] | None = None

    @classmethod
    def of_this_loop(cls) -> "_ExitWatch":
        loop = asyncio.get_running_loop()
        watch = cls._of_loop.get(loop)
        if watch is None:  # once per loop, not a discarded one per stream
            watch = cls._of_loop[loop] = cls()
        return watch

    def add(self, stream: EventStream, streaming: asyncio.Task[None]) -> None:
        self._streams[stream] = streaming
        if self._watching is None or self._watching.done():
            self._watching = asyncio.create_task(self._watch(), name="sse-exit-watch")

    def discard(self, stream: EventStream) -> None:
        self._streams.pop(stream, None)

    async def _watch(self) -> None:
        while self._streams:
            if _server_exiting():
                for stream, streaming in list(self._streams.items()):
                    stream.end(streaming, "exit")
                return
            await asyncio.sleep(EXIT_POLL)


def _server_exiting() -> bool:
    if AppStatus.should_exit:
        return True
    handler = signal.getsignal(signal.SIGTERM)
    server = getattr(handler, "__self__", None)  # a uvicorn Server's bound handle_exit, when uvicorn installed it
    return AppStatus.enable_automatic_graceful_drain and bool(getattr(server, "should_exit", False))


async def _closed(events: object) -> None:
    """The events' generator closed (a no-op if it ended), so that the SDK's cleanup has run when the call returns."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:
            log.exception("closing a stream's events failed")


def use_event_streams() -> None:
    """From now on a2a-sdk's routes answer streams with `EventStream` (its `create_event_source_response`)."""
    common.EventSourceResponse = EventStream  # type: ignore[misc]
