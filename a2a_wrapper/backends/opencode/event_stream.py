"""One long-lived consumer of OpenCode's `/event` SSE stream, routing events to turns by session id.

OpenCode never releases an `/event` subscription, so one stream per server is held for its whole
life (see notes/opencode.md §7). Events of child sessions (the `task` tool) go to the parent's turn.
"""

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from a2a_wrapper import fast_json
from a2a_wrapper.backends.base import READ_SLICE
from a2a_wrapper.backends.kit.stream import PacedQueue
from a2a_wrapper.backends.opencode.sse_events import SseSplitter
from a2a_wrapper.backends.opencode.translate import TRANSLATED
from a2a_wrapper.backoff import Backoff, CrashHistory

log = logging.getLogger(__name__)

RECONNECTED = "a2a-wrapper.reconnected"  # synthetic event: events may have been missed
BACKEND_EXITED = "a2a-wrapper.backend-exited"  # synthetic event: the OpenCode process died
EventQueue = PacedQueue[dict[str, Any]]
HURRY = 0.003  # seconds after an eager delivery during which every event hands the loop over
RECONNECT_BACKOFF = Backoff(backoff=0.25, max_backoff=5.0, window=60.0)
SILENCE = 45.0  # seconds without a byte before the stream counts as lost (OpenCode's heartbeat comes every ~10 s)


@dataclass(eq=False)
class Subscription:
    """One listener's queue. While `eager`, each event is handed over at once (a turn still waiting for its
    first text); after that, events that arrive in a burst reach the listener together."""

    queue: EventQueue = field(default_factory=lambda: PacedQueue(ends_pace=_may_end_pace))
    eager: bool = True


def _may_end_pace(event: dict[str, Any]) -> bool:
    """Anything but a text delta (an answer's or a reasoning's) may be more than text: it wakes a paced turn."""
    return event.get("type") != "message.part.delta"


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


class LoopShare:
    """How often the reader hands the loop over. An eager listener takes its event at once, and for HURRY after
    it the loop is handed over after every event: that event (a turn's first text) then crosses a2a-sdk's
    queues and reaches the caller's SSE stream in ~1 ms instead of waiting out a slice of the burst behind it
    at each of its ~6 hops. Otherwise, in a long burst of buffered events, every READ_SLICE. Only while more is
    ready to read: with nothing buffered the next read waits for the socket, which hands the loop over anyway (a
    trivial turn's ~20 events came one per read, and a pass of the loop for each cost ~0.35 ms of CPU a turn)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock  # the loop's
        self._yielded = self._hurry_until = clock()

    async def after(self, urgent: bool, more_ready: bool) -> None:
        now = self._clock()
        if urgent:
            self._hurry_until = now + HURRY
        if not more_ready:
            self._yielded = now  # the next read waits: the loop is handed over there
        elif now < self._hurry_until or now - self._yielded > READ_SLICE:
            self._yielded = now
            await asyncio.sleep(0)


class SilenceWatch:
    """Ends a stream whose server fell silent: its reader raises TimeoutError once no byte came for `bound` seconds
    (found within a third of it more). A look every third of the bound, where aiohttp's `sock_read` timeout cancels
    and schedules a timer for every chunk read (~7 a trivial turn)."""

    def __init__(self, content: aiohttp.StreamReader, bound: float) -> None:
        self._content = content
        self._bound = bound
        self._loop = asyncio.get_running_loop()
        self._seen = content.total_bytes
        self._changed = self._loop.time()
        self._timer = self._loop.call_later(bound / 3, self._look)

    def cancel(self) -> None:
        self._timer.cancel()

    def _look(self) -> None:
        now = self._loop.time()
        if self._content.total_bytes != self._seen:
            self._seen, self._changed = self._content.total_bytes, now
        elif now - self._changed >= self._bound:
            self._content.set_exception(TimeoutError(f"no byte from the server for {self._bound:g} s"))
            return
        self._timer = self._loop.call_later(self._bound / 3, self._look)


class EventStream:
    """Holds the subscription; `subscribe(session_id)` gives a queue of that session's events."""

    def __init__(self, name: str, http: aiohttp.ClientSession) -> None:
        self._name = name
        self._http = http
        self._queues: dict[str, list[Subscription]] = {}
        self._parents: dict[str, str] = {}
        self.connected = asyncio.Event()

    def use(self, http: aiohttp.ClientSession) -> None:
        """A restarted backend: the next reconnect goes to its new address."""
        self._http = http

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
        first = True
        loop = asyncio.get_running_loop()
        share = LoopShare(loop.time)
        while True:
            try:
                async for event, more_ready in self._events():
                    if not self.connected.is_set():
                        self.connected.set()
                        lost = CrashHistory(RECONNECT_BACKOFF)
                        if not first:
                            self.broadcast({"type": RECONNECTED, "properties": {}})
                        first = False
                    await share.after(self._route(event), more_ready)
                log.warning("[%s] event stream ended; reconnecting", self._name)
            except (aiohttp.ClientError, TimeoutError) as exc:
                log.warning("[%s] event stream lost (%s); reconnecting", self._name, exc)
            except Exception:  # a boundary: whatever broke this connection, the next one starts clean
                log.exception("[%s] event stream failed; reconnecting", self._name)
            self.connected.clear()
            await asyncio.sleep(lost.delay(loop.time()))

    async def _events(self) -> AsyncIterator[tuple[dict[str, Any], bool]]:
        """Each event, and whether more is ready to read without waiting (more events in the chunk it came in, or
        bytes received since)."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=5)  # silence is SilenceWatch's
        async with self._http.get("/event", timeout=timeout) as response:
            response.raise_for_status()
            content = response.content
            silence = SilenceWatch(content, SILENCE)
            splitter = SseSplitter()
            read = 0
            try:
                async for chunk in content.iter_any():
                    read += len(chunk)
                    datas = splitter.feed(chunk)
                    last = len(datas) - 1
                    for index, data in enumerate(datas):
                        try:
                            event = _parsed(data)
                        except ValueError:
                            log.warning("[%s] unreadable event skipped", self._name)
                            continue
                        yield event, index < last or content.total_bytes > read
            finally:
                silence.cancel()

    def _route(self, event: dict[str, Any]) -> bool:
        """Delivers the event; True if an eager listener with nothing left to do (so waiting) got it."""
        kind = event.get("type", "")
        if kind in ("session.created", "session.updated"):
            info = (event.get("properties") or {}).get("info") or {}
            if info.get("parentID"):
                self._parents[info["id"]] = info["parentID"]
        if kind not in TRANSLATED:  # what no turn reads (the server's hello, a session's status or diff, ...)
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
