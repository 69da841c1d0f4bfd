"""A turn's events on their way to the consumer, batched once for every adapter.

Each adapter feeds one queue (its protocol's raw messages, or events it already translated) and reads it back
through `batches`: everything already waiting is handed over together, text deltas joined, so a burst of 300
chunks becomes one A2A artifact update instead of 300. The first item of a burst is never held to wait for more,
and no batch collects for longer than BURST_SLICE, so a steady stream still reaches the caller every few
milliseconds. A `Done` ends its batch and the stream.
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

from a2a_wrapper.backends.base import BURST_SLICE, Batch
from a2a_wrapper.events import Done, StreamEvent, coalesce

Item = TypeVar("Item")
Translate = Callable[[Item], Awaitable[Sequence[StreamEvent]]]


async def as_is(event: StreamEvent) -> Sequence[StreamEvent]:
    """The translation of a queue that holds StreamEvents already."""
    return (event,)


async def batches(queue: "asyncio.Queue[Item]", translate: Translate[Item]) -> AsyncIterator[Batch]:
    """The queue's items, translated, as batches of StreamEvents until one holds a `Done`."""
    while True:
        batch = await _next_batch(queue, translate)
        if batch:
            yield batch
            if isinstance(batch[-1], Done):
                return


async def _next_batch(queue: "asyncio.Queue[Item]", translate: Translate[Item]) -> Batch:
    loop = asyncio.get_running_loop()
    events = list(await translate(await queue.get()))
    collect_until = loop.time() + BURST_SLICE
    while not queue.empty() and loop.time() < collect_until and not _ends(events):
        events += await translate(queue.get_nowait())
    return _through_done(coalesce(events))


def _ends(events: list[StreamEvent]) -> bool:
    return any(isinstance(event, Done) for event in events)


def _through_done(events: list[StreamEvent]) -> Batch:
    """Nothing after the first `Done`: the turn is over there."""
    for index, event in enumerate(events):
        if isinstance(event, Done):
            return tuple(events[: index + 1])
    return tuple(events)
