"""A turn's events on their way to the consumer, batched once for every adapter.

Each adapter feeds one queue (its protocol's raw messages, or events it already translated) and reads it back
through `batches`: everything already waiting is handed over together, text deltas joined, so a burst of 300
chunks becomes one A2A artifact update instead of 300. The first item of a burst is never held to wait for more,
and no batch collects for longer than BURST_SLICE, so a steady stream still reaches the caller every few
milliseconds. A `Done` ends its batch and the stream.

An answer that streams faster than the A2A side sends it is paced: text that follows a batch of text handed
over less than TEXT_PACE ago waits out the rest of that pace, gathering what arrives meanwhile, unless an event
that goes at once (the turn's end, a tool call) cuts the wait short: the last words of an answer do not wait out
a pace when the turn ends right behind them. The first text of an answer (and anything after other events) is
never held; a reply of 300 deltas in 100 ms becomes ~20 chunks instead of one per delta, each of which costs
a2a-sdk a task save and an SSE event.

The queue is a `PacedQueue`: it wakes a pace when something arrives that may end it, and not for each delta of
a flowing answer (waking on every arrival cost a steady 300-delta reply ~5 ms more CPU). A pace that looked
every 2 ms instead held a trivial turn's end 2.2 ms (p50, traced: OpenCode's `session.idle` read to its
translation), since its last words start a pace and the end arrives within it.
"""

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TypeVar

from a2a_wrapper.backends.base import BURST_SLICE, Batch
from a2a_wrapper.events import Done, StreamEvent, Text, Thought, Usage, coalesce
from a2a_wrapper.loop_queue import LoopQueue

TEXT_PACE = 0.005  # seconds: at most one chunk of a flowing answer per pace
GATHERED = (Text, Thought, Usage)  # what the pace holds with the text; any other event ends its wait
Item = TypeVar("Item")
Translate = Callable[[Item], Awaitable[Sequence[StreamEvent]]]


def not_gathered(item: object) -> bool:
    """Whether a queued StreamEvent (or an adapter's own marker) may end a pace: anything but more text."""
    return not isinstance(item, GATHERED)


class PacedQueue(LoopQueue[Item]):
    """A turn's queue that tells a pace waiting on it when an item arrives that may end the wait (`ends_pace`, for
    the adapter's items before their translation; an item it wrongly passes as gathered waits out the pace, at
    most TEXT_PACE, and is not lost)."""

    def __init__(self, ends_pace: Callable[[Item], bool] = not_gathered) -> None:
        super().__init__()
        self._ends_pace = ends_pace
        self.arrived = asyncio.Event()

    def put_nowait(self, item: Item) -> None:
        super().put_nowait(item)
        if self._ends_pace(item):
            self.arrived.set()


async def as_is(event: StreamEvent) -> Sequence[StreamEvent]:
    """The translation of a queue that holds StreamEvents already."""
    return (event,)


async def batches(queue: PacedQueue[Item], translate: Translate[Item]) -> AsyncGenerator[Batch]:
    """The queue's items, translated, as batches of StreamEvents until one holds a `Done`."""
    loop = asyncio.get_running_loop()
    paced_until = 0.0  # loop time before which more text waits (set by a batch of text)
    while True:
        batch = await _next_batch(queue, translate, paced_until)
        if batch:
            yield batch
            if isinstance(batch[-1], Done):
                return
            paced_until = loop.time() + TEXT_PACE if any(isinstance(e, Text) for e in batch) else 0.0


async def _next_batch(queue: PacedQueue[Item], translate: Translate[Item], paced_until: float) -> Batch:
    loop = asyncio.get_running_loop()
    events = list(await translate(await queue.get()))
    if events and isinstance(events[0], Text) and loop.time() < paced_until:
        events += await _during_pace(queue, translate, paced_until)
    collect_until = loop.time() + BURST_SLICE
    ended = _ends(events)
    while not queue.empty() and loop.time() < collect_until and not ended:
        more = await translate(queue.get_nowait())
        events += more
        ended = _ends(more)  # only the new ones: a burst of 300 deltas is not scanned 300 times
    return _through_done(coalesce(events))


async def _during_pace(queue: PacedQueue[Item], translate: Translate[Item], paced_until: float) -> list[StreamEvent]:
    """What arrives while text waits out the pace; the wait ends early at an event that goes at once (the turn's
    end, a tool call, a request for a person), so an answer's last words do not wait out the pace for nothing."""
    loop = asyncio.get_running_loop()
    gathered: list[StreamEvent] = []
    while True:
        while not queue.empty():
            more = await translate(queue.get_nowait())
            gathered += more
            if any(not_gathered(event) for event in more):
                return gathered
        if loop.time() >= paced_until:
            return gathered
        queue.arrived.clear()  # the queue is empty: only what arrives from here on wakes the pace
        timer = loop.call_at(paced_until, queue.arrived.set)
        try:
            await queue.arrived.wait()
        finally:
            timer.cancel()


def _ends(events: Sequence[StreamEvent]) -> bool:
    return any(isinstance(event, Done) for event in events)


def _through_done(events: list[StreamEvent]) -> Batch:
    """Nothing after the first `Done`: the turn is over there."""
    for index, event in enumerate(events):
        if isinstance(event, Done):
            return tuple(events[: index + 1])
    return tuple(events)
