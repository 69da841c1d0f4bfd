"""Where each streamed event of a task stands in that task's order: the position a client resumes a stream from.

a2a-sdk hands every event a running task emits to its `TaskEventStream` (`publish`, with the task's version after
that event), right after the event went to the task's subscribers. The journal is that stream, so it sees each
event, in order, on the replica that runs the task, and gives it a position; the request handler stamps the
position on the event as it leaves (frontend/handler/resumable_streams.py), and a client that reconnects with it
gets the events after it (`events_after`).

- Shared state (`SharedJournal`): the position is the task's version. a2a-sdk's versioned store writes each event
  to the shared `task_events` table with that version, in the transaction of the task's save, so any replica
  replays from the database (the SDK's own `DatabaseTaskEventStream`, which also tails the live ones).
- SQLite (`LocalJournal`): one process serves the tasks, and the SDK gives no version (its store is not
  versioned), so the journal numbers the events itself and keeps them in memory: at most `KEPT_EVENTS` per task
  and `KEPT_IN_ALL` in all, the tasks that published least recently forgotten first. Positions count every
  task's events from this process's start time in milliseconds times a million: a position of an earlier run is
  never one of this run's.

A position the journal does not hold (never given, another task's, or no longer kept) is refused by the handler.
"""

import asyncio
import re
import time
from abc import abstractmethod
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator
from contextlib import aclosing

from a2a.server.cluster import DatabaseTaskEventStream, TaskEventStream, TaskVersion, VersionedEvent
from a2a.server.cluster.database_event_stream import stream_response_to_event
from a2a.server.events.event_queue import Event
from a2a.types import StreamResponse
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.sdk_tables import event_data_at

RECENT_EVENTS = 1024  # per task, on shared state: how far a stream may lag behind its task and still get ids
KEPT_EVENTS = 10_000  # per task, on SQLite: the events a resumed stream can be given
KEPT_IN_ALL = 100_000  # events kept for all tasks together (tens of MB); past it the task that published least
# recently is forgotten whole
_COUNT = re.compile(r"TaskVersion\((\d+)\)")


class EventJournal(TaskEventStream):
    def __init__(self, per_task: int) -> None:
        self._per_task = per_task
        self._tasks: OrderedDict[str, deque[tuple[int, Event]]] = OrderedDict()  # least recently published first
        self._kept = 0  # events in all of them

    def position_of(self, task_id: str, event: Event) -> int | None:
        """The position of `event` (the object the SDK published, so any other is None), newest first."""
        recent = self._tasks.get(task_id)
        if recent is not None:
            for position, published in reversed(recent):
                if published is event:
                    return position
        return None

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        position = self._position(task_id, event.version)
        recent = self._tasks.get(task_id)
        if recent is None:
            recent = self._tasks[task_id] = deque(maxlen=self._per_task)
        else:
            self._tasks.move_to_end(task_id)
        self._kept += len(recent) < self._per_task  # a full deque drops its oldest as it takes one
        recent.append((position, event.event))
        while self._kept > KEPT_IN_ALL and len(self._tasks) > 1:
            self._kept -= len(self._tasks.popitem(last=False)[1])
        self._published(task_id)

    @abstractmethod
    def _position(self, task_id: str, version: TaskVersion) -> int: ...

    def _published(self, task_id: str) -> None:
        """Called after each event is recorded."""

    @abstractmethod
    async def event_at(self, task_id: str, position: int) -> Event | None:
        """The event of `task_id` at `position`; None when the journal holds none there (to resume after)."""

    @abstractmethod
    def events_after(self, task_id: str, position: int) -> AsyncGenerator[tuple[int, Event]]:
        """The task's events after `position`, with theirs, then its live ones, without end."""

    async def destroy(self, task_id: str) -> None:
        """Nothing: an ended task's events stay until they are pushed out, so its last stream can still resume."""


class LocalJournal(EventJournal):
    def __init__(self) -> None:
        super().__init__(KEPT_EVENTS)
        self._last = int(time.time() * 1000) * 1_000_000  # one count for all tasks: a forgotten task's never repeat
        self._waiting: dict[str, asyncio.Event] = {}  # task id -> set at its next event

    def _position(self, task_id: str, version: TaskVersion) -> int:
        self._last += 1
        return self._last

    def _published(self, task_id: str) -> None:
        waiting = self._waiting.pop(task_id, None)
        if waiting is not None:
            waiting.set()

    async def event_at(self, task_id: str, position: int) -> Event | None:
        return next((event for kept, event in self._tasks.get(task_id, ()) if kept == position), None)

    async def events_after(self, task_id: str, position: int) -> AsyncGenerator[tuple[int, Event]]:
        while True:
            newer = [(kept, event) for kept, event in self._tasks.get(task_id, ()) if kept > position]
            if not newer:
                await self._waiting.setdefault(task_id, asyncio.Event()).wait()
                continue
            for kept, event in newer:
                position = kept
                yield kept, event

    async def subscribe(self, task_id: str, *, after: TaskVersion) -> AsyncGenerator[VersionedEvent]:
        """What the SDK tails for a task this process holds no running copy of (waiting for input): its events
        from now on (its snapshot, read with no version, is what the subscriber has already)."""
        recent = self._tasks.get(task_id)
        start = recent[-1][0] if recent else self._last
        async for position, event in self.events_after(task_id, start):
            yield VersionedEvent(event=event, version=TaskVersion(position))


class SharedJournal(EventJournal):
    def __init__(self, engine: AsyncEngine, stream: DatabaseTaskEventStream) -> None:
        super().__init__(RECENT_EVENTS)
        self._engine = engine
        self._stream = stream

    def _position(self, task_id: str, version: TaskVersion) -> int:
        return _as_int(version)

    async def event_at(self, task_id: str, position: int) -> Event | None:
        data = await event_data_at(self._engine, task_id, position)
        if data is None:
            return None
        response = StreamResponse()
        response.ParseFromString(data)
        return stream_response_to_event(response)

    async def events_after(self, task_id: str, position: int) -> AsyncGenerator[tuple[int, Event]]:
        async with aclosing(self._stream.subscribe(task_id, after=TaskVersion(position))) as events:
            async for versioned in events:
                yield _as_int(versioned.version), versioned.event

    def subscribe(self, task_id: str, *, after: TaskVersion) -> AsyncGenerator[VersionedEvent]:
        return self._stream.subscribe(task_id, after=after)

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        await super().publish(task_id, event)
        await self._stream.publish(task_id, event)


def _as_int(version: TaskVersion) -> int:
    """The versions of a2a-sdk's database store are counts (1 for a task's first write, then one more per write);
    TaskVersion shows its value only in its repr, `TaskVersion(7)`."""
    found = _COUNT.fullmatch(repr(version))
    if found is None:
        raise TypeError(f"a task version that is not a count: {version!r}")
    return int(found[1])
