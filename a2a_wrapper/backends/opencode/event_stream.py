"""One long-lived consumer of OpenCode's `/event` SSE stream, routing events to turns by session id.

OpenCode never releases an `/event` subscription, so one stream per server is held for its whole
life (see notes/opencode.md §7). Events of child sessions (the `task` tool) go to the parent's turn.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from a2a_wrapper import fast_json
from a2a_wrapper.backends.kit.stream import PacedQueue
from a2a_wrapper.backends.opencode.json_http import JsonHttp, ResponseError
from a2a_wrapper.backends.opencode.sse_response import SseResponse
from a2a_wrapper.backends.opencode.translate import TRANSLATED
from a2a_wrapper.backoff import Backoff, CrashHistory

log = logging.getLogger(__name__)

RECONNECTED = "a2a-wrapper.reconnected"  # synthetic event: events may have been missed
BACKEND_EXITED = "a2a-wrapper.backend-exited"  # synthetic event: the OpenCode process died
EventQueue = PacedQueue[dict[str, Any]]
RECONNECT_BACKOFF = Backoff(backoff=0.25, max_backoff=5.0, window=60.0)
MOVED = partial(ConnectionResetError, "the backend restarted at a new address")
SILENCE = 45.0  # seconds without a byte before the stream counts as lost (OpenCode's heartbeat comes every ~10 s)


# Text deltas of both APIs: 1.x's answer and reasoning parts, 2.x's answer and reasoning.
TEXT_DELTAS = frozenset({"message.part.delta", "session.text.delta", "session.reasoning.delta"})


@dataclass(frozen=True)
class Dialect:
    """What differs between OpenCode's event streams: the path, which event types a turn reads, and how an event
    is read into the 1.x shape routing works on (`{type, properties}`, a session id in `properties`)."""

    path: str
    translated: frozenset[str]
    shape: Callable[[dict[str, Any]], dict[str, Any]] = lambda event: event


V1 = Dialect("/event", TRANSLATED)


@dataclass(eq=False)
class Subscription:
    """One listener's queue. While `eager`, the reader hands the loop over as soon as it has given it an event (a
    turn still waiting for its first text); after that, events that arrive in a burst reach the listener together."""

    queue: EventQueue = field(default_factory=lambda: PacedQueue(ends_pace=_may_end_pace))
    eager: bool = True


def _may_end_pace(event: dict[str, Any]) -> bool:
    """Anything but a text delta (an answer's or a reasoning's) may be more than text: it wakes a paced turn."""
    return event.get("type") not in TEXT_DELTAS


def _parsed(data: bytes) -> dict[str, Any]:
    """An event's JSON object; bytes that are not UTF-8 are read with U+FFFD in their place, as a text decoder
    would. Raises ValueError for anything else."""
    try:
        event = fast_json.loads(data)
    except ValueError:
        event = fast_json.loads(data.decode("utf-8", errors="replace"))
    if not isinstance(event, dict):
        raise ValueError("not a JSON object")
    return event


def session_of(event: dict[str, Any]) -> str | None:
    props = event.get("properties") or {}
    for holder in (props, props.get("part") or {}, props.get("info") or {}):
        session_id = holder.get("sessionID")
        if isinstance(session_id, str):
            return session_id
    if event.get("type", "").startswith("session.") and isinstance((props.get("info") or {}).get("id"), str):
        return str(props["info"]["id"])
    return None


class SilenceWatch:
    """Ends a stream whose server fell silent: `fail` gets a TimeoutError once no byte came for `bound` seconds
    (found within a third of it more), by a look every third of the bound at the count of bytes `received`."""

    def __init__(self, received: Callable[[], int], fail: Callable[[BaseException], None], bound: float) -> None:
        self._received = received
        self._fail = fail
        self._bound = bound
        self._loop = asyncio.get_running_loop()
        self._seen = received()
        self._changed = self._loop.time()
        self._timer = self._loop.call_later(bound / 3, self._look)

    def cancel(self) -> None:
        self._timer.cancel()

    def _look(self) -> None:
        now = self._loop.time()
        if self._received() != self._seen:
            self._seen, self._changed = self._received(), now
        elif now - self._changed >= self._bound:
            self._fail(TimeoutError(f"no byte from the server for {self._bound:g} s"))
            return
        self._timer = self._loop.call_later(self._bound / 3, self._look)


class EventStream:
    """Holds the subscription; `subscribe(session_id)` gives a queue of that session's events."""

    def __init__(self, name: str, http: JsonHttp, path: str = "/event", dialect: Dialect = V1) -> None:
        self._name = name
        self._http = http
        self._path = path  # with `?directory=`: the stream of that directory's instance
        self._dialect = dialect
        self._queues: dict[str, list[Subscription]] = {}
        self._parents: dict[str, str] = {}
        self._reconnected = False  # no event read since a reconnect: the first one is preceded by RECONNECTED
        self._reading: SseResponse | None = None  # the connection's answer, while one is open
        self._moved = asyncio.Event()  # a new address to read from at once
        self.connected = asyncio.Event()

    @property
    def http(self) -> JsonHttp:
        return self._http

    def use(self, http: JsonHttp) -> None:
        """A restarted backend: the stream reads from its new address at once. A connection still open to the old
        one is dropped: it may hang where the old server stood (the sandbox's socket answers for the new one)."""
        self._http = http
        self._moved.set()
        if self._reading is not None:
            self._reading.fail(MOVED())

    def subscribe(self, session_id: str) -> Subscription:
        subscription = Subscription()
        self._queues.setdefault(session_id, []).append(subscription)
        return subscription

    def unsubscribe(self, session_id: str, subscription: Subscription) -> None:
        subscriptions = self._queues.get(session_id, [])
        if subscription in subscriptions:
            subscriptions.remove(subscription)
        if not subscriptions:
            self._queues.pop(session_id, None)
            for child in [c for c, p in self._parents.items() if p == session_id]:
                del self._parents[child]

    def parent_of(self, session_id: str) -> str | None:
        """The session a subagent's session was created by, as the stream announced it."""
        return self._parents.get(session_id)

    def broadcast(self, event: dict[str, Any]) -> None:
        for subscriptions in self._queues.values():
            for subscription in subscriptions:
                subscription.queue.put_nowait(event)

    async def run(self) -> None:
        """Consume until cancelled, reconnecting on the shared backoff (counted again from each connection)."""
        lost = CrashHistory(RECONNECT_BACKOFF)
        loop = asyncio.get_running_loop()
        while True:
            try:
                await self.follow()
                log.warning("[%s] event stream ended; reconnecting", self._name)
            except (OSError, ResponseError, TimeoutError) as exc:
                log.warning("[%s] event stream lost (%s); reconnecting", self._name, exc)
            except Exception:  # a boundary: whatever broke this connection, the next one starts clean
                log.exception("[%s] event stream failed; reconnecting", self._name)
            if self.connected.is_set():
                lost = CrashHistory(RECONNECT_BACKOFF)
                self._reconnected = True
            self.connected.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(lost.delay(loop.time())):
                    await self._moved.wait()
            if self._moved.is_set():
                self._moved.clear()
                lost = CrashHistory(RECONNECT_BACKOFF)

    async def follow(self) -> None:
        """Reads one connection's stream, each event routed as it arrives; returns when the server ends it, raises
        what ended it otherwise (OSError, ResponseError, TimeoutError after SILENCE without a byte)."""
        response = SseResponse(self._http.head("GET", self._path), self._deliver)
        transport, _ = await self._http.open(lambda: response)
        silence = SilenceWatch(lambda: response.received, response.fail, SILENCE)
        self._reading = response
        if self._moved.is_set():  # the backend restarted while this connected to its old address
            response.fail(MOVED())
        try:
            await response.ended
        finally:
            self._reading = None
            silence.cancel()
            transport.close()

    def _deliver(self, data: bytes) -> bool:
        try:
            event = self._dialect.shape(_parsed(data))
        except ValueError:
            log.warning("[%s] unreadable event skipped", self._name)
            return False
        if not self.connected.is_set():
            self.connected.set()
            if self._reconnected:
                self._reconnected = False
                self.broadcast({"type": RECONNECTED, "properties": {}})
        return self._route(event)

    def _route(self, event: dict[str, Any]) -> bool:
        """Delivers the event; True if an eager listener with nothing left to do (so waiting) got it."""
        kind = event.get("type", "")
        if kind in ("session.created", "session.updated"):
            info = (event.get("properties") or {}).get("info") or {}
            if info.get("parentID"):
                self._parents[info["id"]] = info["parentID"]
        if (
            kind not in self._dialect.translated
        ):  # what no turn reads (the server's hello, a session's status or diff, ...)
            return False
        session_id = session_of(event)
        if session_id is None:
            return False
        queues = self._queues.get(session_id)
        if queues is None and session_id in self._parents:
            queues = self._queues.get(self._root(session_id))
            event = {**event, "child": True}
        hand_over = False
        for subscription in queues or ():
            hand_over = hand_over or (subscription.eager and subscription.queue.empty())
            subscription.queue.put_nowait(event)
        return hand_over

    def _root(self, session_id: str) -> str:
        seen = set()
        while session_id in self._parents and session_id not in seen:
            seen.add(session_id)
            session_id = self._parents[session_id]
        return session_id
