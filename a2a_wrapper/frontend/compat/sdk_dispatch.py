"""a2a-sdk's event queues hand an event to their sinks in the call that enqueues it, when nothing is ahead of it.

A running task of a2a-sdk 1.3.0 has two `EventQueueSource`s (the executor's events, then the subscribers'), and
each passes every event through a queue of its own to a dispatcher task, which starts a `gather` (one more task)
to put it in the sinks: per event and per queue, a task and three turns of the loop before a consumer can see it.
Here, when the source's own queue holds nothing and its dispatcher has nothing in hand, and every open sink has
room, `enqueue_event` puts the event in each sink itself; its order is the same, as nothing was ahead of it.
Otherwise (a backlog, a full sink, which the SDK may evict, a closed source) the event takes the SDK's own path.
Closing a source with one sink closes it without a task of its own.
"""

import asyncio
import contextlib

from a2a.server.agent_execution import active_task
from a2a.server.events import event_queue_v2
from a2a.server.events.event_queue import DEFAULT_MAX_QUEUE_SIZE, Event
from a2a.server.events.event_queue_v2 import EventQueueSink, EventQueueSource
from a2a.utils._async_queue_compat import QueueShutDown

from a2a_wrapper.loop_queue import LoopQueue


class DirectEventQueueSource(EventQueueSource):
    def __init__(self, max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE, create_default_sink: bool = True) -> None:
        """The SDK's own (1.3.0), but for its dispatcher task: started by the first event that needs it, most
        tasks' never (tests/test_sdk_dispatch.py holds the attributes to the SDK's)."""
        if max_queue_size <= 0:
            raise ValueError("max_queue_size must be greater than 0")
        self._incoming_queue = event_queue_v2.create_async_queue(maxsize=max_queue_size)
        self._lock = asyncio.Lock()
        self._sinks: set[EventQueueSink] = set()
        self._is_closed = False
        self._default_sink = EventQueueSink(parent=self, max_queue_size=max_queue_size) if create_default_sink else None
        if self._default_sink is not None:
            self._sinks.add(self._default_sink)
        self._dispatcher_task = asyncio.get_running_loop().create_future()  # type: ignore[assignment]  # a Task's API
        self._dispatcher_task.set_result(None)  # what close() cancels and awaits until a dispatcher starts
        self._dispatcher_task_expected_to_cancel = False

    @property
    def _dispatcher_started(self) -> bool:
        return isinstance(self._dispatcher_task, asyncio.Task)

    async def enqueue_event(self, event: Event) -> None:
        if self._delivered_now(event):
            return
        if not self._dispatcher_started and not self._is_closed:
            self._dispatcher_task = asyncio.create_task(self._dispatch_loop())
        await super().enqueue_event(event)

    def _nothing_in_flight(self) -> bool:
        """No event queued at the source, nor taken by its dispatcher and not yet in the sinks."""
        incoming = self._incoming_queue
        return isinstance(incoming, LoopQueue) and not incoming.unfinished

    def _delivered_now(self, event: Event) -> bool:
        """Puts the event in every open sink if that needs no wait and nothing is ahead of it; says if it did."""
        if self._is_closed or self._lock.locked() or not self._nothing_in_flight():
            return False  # closed (the SDK's path drops the event, saying so), or events are ahead of it
        sinks = [sink for sink in self._sinks if not sink.is_closed()]
        if any(sink.queue.full() for sink in sinks):
            return False
        for sink in sinks:
            with contextlib.suppress(QueueShutDown):  # as the SDK's own put into a sink closing meanwhile
                sink.queue.put_nowait(event)
        return True

    async def close(self, immediate: bool = False) -> None:
        """The SDK's own (1.3.0), but one sink, a running task's usual count, is closed in this task: the SDK's
        `gather` of the sinks' closes starts a task even for one. Several are closed by that `gather`, as there."""
        async with self._lock:
            self._is_closed = True
            self._incoming_queue.shutdown(immediate=immediate)
            sinks = list(self._sinks)
        if not immediate:
            await self._join_incoming_queue()
        self._dispatcher_task_expected_to_cancel = True
        self._dispatcher_task.cancel()
        if len(sinks) == 1:
            await sinks[0].close(immediate=immediate)
        else:
            await asyncio.gather(*(sink.close(immediate=immediate) for sink in sinks))
        with contextlib.suppress(asyncio.CancelledError, Exception):  # as the SDK's: teardown never raises
            await self._dispatcher_task

    async def _join_incoming_queue(self) -> None:
        """What a graceful close waits for: nothing, when every event is in the sinks already (the SDK's own wait
        starts a task and an `asyncio.wait` to learn that)."""
        if not self._nothing_in_flight():
            await super()._join_incoming_queue()


def use_direct_dispatch() -> None:
    """From now on the SDK's running tasks make DirectEventQueueSources."""
    active_task.EventQueueSource = DirectEventQueueSource  # type: ignore[misc]
