"""a2a-sdk's task queues on asyncio's own Queue before Python 3.13, not on culsans.

a2a-sdk 1.3.0 makes every queue of a running task (its requests, its incoming events, each subscriber's sink)
with `create_async_queue`: asyncio.Queue from Python 3.13, which has `shutdown`; before that, the async side of a
culsans queue, which is thread-safe, built on aiologic's locks, and the SDK's dearest part: a five-event
stream costs the SDK's handler 2.4 ms of CPU on culsans and 1.65 ms on this queue (Python 3.11). Neither the SDK
nor this agent touches those queues off the event loop, so here they are asyncio's Queue with 3.13's `shutdown`
(its semantics, backported), raising the `QueueShutDown` that the SDK's `except` clauses name.
"""

import asyncio
import sys
from typing import Any, TypeVar

from a2a.server.agent_execution import active_task
from a2a.server.events import event_queue, event_queue_v2
from a2a.utils import _async_queue_compat

Item = TypeVar("Item")

# every module that took `create_async_queue` by name (a2a-sdk 1.3.0; tests/test_sdk_queues.py checks the rest)
SDK_MODULES = (_async_queue_compat, event_queue, event_queue_v2, active_task)


class LoopQueue(asyncio.Queue[Item]):
    """asyncio.Queue with Python 3.13's `shutdown`: after it, `put` raises QueueShutDown and `get` does once the
    queue is empty; `shutdown(immediate=True)` also drops what is queued (counting it done, so `join` returns)."""

    _shut = False

    def shutdown(self, immediate: bool = False) -> None:
        self._shut = True
        if immediate:
            while not self.empty():
                self._get()  # type: ignore[attr-defined]  # asyncio.Queue's storage hooks
                if self._unfinished_tasks > 0:  # type: ignore[attr-defined]
                    self._unfinished_tasks -= 1  # type: ignore[attr-defined]
            if self._unfinished_tasks == 0:  # type: ignore[attr-defined]
                self._finished.set()  # type: ignore[attr-defined]
        for waiter in (*self._getters, *self._putters):  # type: ignore[attr-defined]
            if not waiter.done():
                waiter.set_result(None)  # each wakes, finds the queue shut and raises
        self._getters.clear()  # type: ignore[attr-defined]
        self._putters.clear()  # type: ignore[attr-defined]

    async def put(self, item: Item) -> None:
        while self.full():
            if self._shut:
                raise _async_queue_compat.QueueShutDown
            await self._wait(self._putters)  # type: ignore[attr-defined]
        self.put_nowait(item)

    def put_nowait(self, item: Item) -> None:
        if self._shut:
            raise _async_queue_compat.QueueShutDown
        super().put_nowait(item)

    async def get(self) -> Item:
        while self.empty():
            if self._shut:
                raise _async_queue_compat.QueueShutDown
            await self._wait(self._getters)  # type: ignore[attr-defined]
        return self.get_nowait()

    def get_nowait(self) -> Item:
        if self._shut and self.empty():
            raise _async_queue_compat.QueueShutDown
        return super().get_nowait()

    async def _wait(self, waiters: Any) -> None:
        """asyncio.Queue's wait for room or for an item (a cancelled waiter passes its wake-up on)."""
        waiter = self._get_loop().create_future()  # type: ignore[attr-defined]
        waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            waiter.cancel()
            try:
                waiters.remove(waiter)
            except ValueError:
                pass
            ready = not self.full() if waiters is self._putters else not self.empty()  # type: ignore[attr-defined]
            if ready and not waiter.cancelled():
                self._wakeup_next(waiters)  # type: ignore[attr-defined]
            raise


def loop_queue(maxsize: int = 0) -> asyncio.Queue[Any]:
    return LoopQueue(maxsize=maxsize)


def use_loop_queues() -> None:
    """From now on the SDK's queues are LoopQueues (Python 3.13 and later: asyncio's own, left as they are)."""
    if sys.version_info >= (3, 13):
        return
    for module in SDK_MODULES:
        module.create_async_queue = loop_queue  # type: ignore[attr-defined]
