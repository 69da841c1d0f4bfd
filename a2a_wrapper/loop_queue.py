"""A FIFO queue for one event loop, with Python 3.13's `shutdown`, at a fraction of asyncio.Queue's calls.

asyncio.Queue, written in Python, spends five to seven calls of its own on each put and get: `full` calls
`qsize`, `_put` and `_get` are hooks for its subclasses, `_wakeup_next` runs even with nobody waiting, and every put
clears the Event that `join` waits on. A trivial A2A turn passes ~35 items through the turn's queue and a2a-sdk's
(compat/sdk_queues.py), and asyncio's queues and locks made ~790 of the agent's ~6,400 Python calls a turn. Here
put and get touch the deque and wake a waiter only when there is one; `join` makes its future only when something
is unfinished. The semantics are asyncio.Queue's (3.13's, with `shutdown`), held to them by tests/test_loop_queue.py.
"""

import asyncio
from collections import deque
from typing import Generic, TypeVar

Item = TypeVar("Item")


class QueueShutDown(Exception):
    """Raised by a put after `shutdown`, and by a get once a shut queue is empty."""


class LoopQueue(Generic[Item]):
    """asyncio.Queue's API and semantics (FIFO, `maxsize`, `task_done`/`join`, 3.13's `shutdown`); what a shut
    queue raises is `shut_down` (a subclass names its caller's exception)."""

    shut_down: type[Exception] = QueueShutDown

    def __init__(self, maxsize: int = 0) -> None:
        self.maxsize = maxsize
        self._items: deque[Item] = deque()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._putters: deque[asyncio.Future[None]] = deque()
        self._joiners: list[asyncio.Future[None]] = []
        self._unfinished = 0
        self._shut = False

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def full(self) -> bool:
        return 0 < self.maxsize <= len(self._items)

    @property
    def unfinished(self) -> int:
        """Items put and not yet marked done (`task_done`): what `join` waits for."""
        return self._unfinished

    def put_nowait(self, item: Item) -> None:
        if self._shut:
            raise self.shut_down
        if 0 < self.maxsize <= len(self._items):
            raise asyncio.QueueFull
        self._items.append(item)
        self._unfinished += 1
        if self._getters:
            _wake_first(self._getters)

    async def put(self, item: Item) -> None:
        while self.full():
            if self._shut:
                raise self.shut_down
            await self._wait(self._putters)
        self.put_nowait(item)

    def get_nowait(self) -> Item:
        if not self._items:
            raise self.shut_down if self._shut else asyncio.QueueEmpty
        item = self._items.popleft()
        if self._putters:
            _wake_first(self._putters)
        return item

    async def get(self) -> Item:
        while not self._items:
            if self._shut:
                raise self.shut_down
            await self._wait(self._getters)
        return self.get_nowait()

    def task_done(self) -> None:
        if self._unfinished <= 0:
            raise ValueError("task_done() called too many times")
        self._unfinished -= 1
        if not self._unfinished:
            self._release_joiners()

    async def join(self) -> None:
        if self._unfinished:
            joiner = asyncio.get_running_loop().create_future()
            self._joiners.append(joiner)
            try:
                await joiner
            except BaseException:  # a cancelled join leaves nothing behind
                if joiner in self._joiners:
                    self._joiners.remove(joiner)
                raise

    def shutdown(self, immediate: bool = False) -> None:
        """From now on a put raises; a get raises once the queue is empty. `immediate` also drops what is queued,
        counting it done, so `join` returns once what was already taken is done. Every waiter wakes."""
        self._shut = True
        if immediate:
            self._unfinished = max(0, self._unfinished - len(self._items))
            self._items.clear()
            if not self._unfinished:
                self._release_joiners()
        for waiter in (*self._getters, *self._putters):
            if not waiter.done():
                waiter.set_result(None)  # each wakes, finds the queue shut and raises
        self._getters.clear()
        self._putters.clear()

    async def _wait(self, waiters: deque[asyncio.Future[None]]) -> None:
        """Until woken by a put (getters) or a get (putters); a waiter cancelled after its wake-up passes it on."""
        waiter = asyncio.get_running_loop().create_future()
        waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            waiter.cancel()
            try:
                waiters.remove(waiter)
            except ValueError:
                pass
            ready = not self.full() if waiters is self._putters else bool(self._items)
            if ready and not waiter.cancelled():
                _wake_first(waiters)
            raise

    def _release_joiners(self) -> None:
        for joiner in self._joiners:
            if not joiner.done():
                joiner.set_result(None)
        self._joiners.clear()


def _wake_first(waiters: deque[asyncio.Future[None]]) -> None:
    """Wakes the first waiter not yet woken nor cancelled, and drops it and those before it."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)
            return
