"""a2a-sdk's event queues hand an event to their sinks in the call that enqueues it, when nothing is ahead of it.

A running task of a2a-sdk 1.3.0 has two `EventQueueSource`s (the executor's events, then the subscribers'), and
each passes every event through a queue of its own to a dispatcher task, which starts a `gather` (one more task)
to put it in the sinks: per event and per queue, a task and three turns of the loop before a consumer can see it.
Here, when the source's own queue holds nothing and its dispatcher has nothing in hand, and every open sink has
room, `enqueue_event` puts the event in each sink itself; its order is the same, as nothing was ahead of it.
Otherwise (a backlog, a full sink, which the SDK may evict, a closed source) the event takes the SDK's own path.
"""

import asyncio
import contextlib

from a2a.server.agent_execution import active_task
from a2a.server.events.event_queue import Event
from a2a.server.events.event_queue_v2 import EventQueueSource
from a2a.utils._async_queue_compat import QueueShutDown


class DirectEventQueueSource(EventQueueSource):
    async def enqueue_event(self, event: Event) -> None:
        if not self._delivered_now(event):
            await super().enqueue_event(event)

    def _delivered_now(self, event: Event) -> bool:
        """Puts the event in every open sink if that needs no wait and nothing is ahead of it; says if it did."""
        incoming = self._incoming_queue
        if self._is_closed or self._lock.locked() or not isinstance(incoming, asyncio.Queue):
            return False  # closed: the SDK's path drops the event, saying so
        if incoming._unfinished_tasks:  # type: ignore[attr-defined]  # queued, or taken and not yet delivered
            return False
        sinks = [sink for sink in self._sinks if not sink.is_closed()]
        if any(sink.queue.full() for sink in sinks):
            return False
        for sink in sinks:
            with contextlib.suppress(QueueShutDown):  # as the SDK's own put into a sink closing meanwhile
                sink.queue.put_nowait(event)
        return True

    async def _join_incoming_queue(self) -> None:
        """What a graceful close waits for: nothing, when every event is in the sinks already (the SDK's own wait
        starts a task and an `asyncio.wait` to learn that)."""
        incoming = self._incoming_queue
        if isinstance(incoming, asyncio.Queue) and not incoming._unfinished_tasks:  # type: ignore[attr-defined]
            return
        await super()._join_incoming_queue()


def use_direct_dispatch() -> None:
    """From now on the SDK's running tasks make DirectEventQueueSources."""
    active_task.EventQueueSource = DirectEventQueueSource  # type: ignore[misc]
