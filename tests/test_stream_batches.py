"""How a turn's events are batched (backends/kit/stream.py): bursts joined, a flowing answer paced, nothing lost.

Pure: a queue fed by a producer task stands for an adapter's protocol; what is asserted is what the A2A side
would send, one artifact chunk per batch of text.
"""

import asyncio
import itertools

import pytest

from a2a_wrapper.backends.base import Batch
from a2a_wrapper.backends.kit import stream as stream_module
from a2a_wrapper.backends.kit.stream import TEXT_PACE, PacedQueue, as_is, batches
from a2a_wrapper.backends.opencode.event_stream import Subscription
from a2a_wrapper.events import Done, StreamEvent, Text, ToolCall

TOOL = ToolCall(id="t1", tool="bash", kind="execute", title="ls", status="pending")


async def collect(queue: PacedQueue[StreamEvent]) -> list[tuple[float, Batch]]:
    loop = asyncio.get_running_loop()
    return [(loop.time(), batch) async for batch in batches(queue, as_is)]


async def test_a_fast_answer_is_paced_into_few_chunks_and_keeps_every_delta() -> None:
    queue: PacedQueue[StreamEvent] = PacedQueue()
    deltas = [f"w{i} " for i in range(300)]

    async def stream() -> None:  # 300 deltas over ~60 ms, each put alone, as an agent writes them
        for index, delta in enumerate(deltas):
            queue.put_nowait(Text(delta=delta))
            if index % 5 == 4:
                await asyncio.sleep(0.001)
        queue.put_nowait(Done(outcome="completed"))

    async with asyncio.timeout(10):
        producer = asyncio.create_task(stream())
        got = await collect(queue)
        await producer
    texts = [event.delta for _, batch in got for event in batch if isinstance(event, Text)]
    assert "".join(texts) == "".join(deltas)
    assert got[0][1] == (Text(delta="".join(deltas[:5])),)  # the first burst goes as it is, not held for more
    assert len(got) < 40  # not one chunk per delta
    assert isinstance(got[-1][1][-1], Done)
    flowing = [at for at, batch in got[:-1] if any(isinstance(e, Text) for e in batch)]  # the last ends the turn
    gaps = [later - earlier for earlier, later in itertools.pairwise(flowing)]
    assert min(gaps) >= TEXT_PACE * 0.9  # at most one chunk of text per pace


@pytest.mark.parametrize("behind", [Done(outcome="completed"), TOOL], ids=["the turn's end", "a tool call"])
async def test_the_last_text_does_not_wait_out_the_pace_when_an_event_that_goes_at_once_follows(
    behind: StreamEvent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_module, "TEXT_PACE", 0.5)  # far longer than a look: a loaded machine cannot blur it
    queue: PacedQueue[StreamEvent] = PacedQueue()
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(10):
        stream = batches(queue, as_is)
        queue.put_nowait(Text(delta="first"))
        assert await anext(stream) == (Text(delta="first"),)
        asked = loop.time()
        queue.put_nowait(Text(delta=" last"))  # within the pace: it waits, gathering...
        next_batch = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.01)
        assert not next_batch.done()
        await asyncio.sleep(0)  # the pace is waiting again, whatever woke with the sleep's end
        queue.put_nowait(behind)  # ...until this arrives, which ends the wait with it, on its arrival:
        for _ in range(5):  # a few turns of the loop, no time: a pace that looked every few ms would still wait
            await asyncio.sleep(0)
        assert next_batch.done()
        assert await next_batch == (Text(delta=" last"), behind)
        assert loop.time() - asked < 0.25


def test_only_what_may_end_a_pace_wakes_it() -> None:
    queue: PacedQueue[StreamEvent] = PacedQueue()
    queue.put_nowait(Text(delta="more"))
    assert not queue.arrived.is_set()  # a flowing answer's deltas do not wake the turn one by one
    queue.put_nowait(TOOL)
    assert queue.arrived.is_set()
    assert [queue.get_nowait(), queue.get_nowait()] == [Text(delta="more"), TOOL]


def test_an_opencode_turn_is_woken_by_anything_but_a_text_delta() -> None:
    queue = Subscription().queue
    queue.put_nowait({"type": "message.part.delta", "properties": {"field": "text", "delta": "hi"}})
    assert not queue.arrived.is_set()
    queue.put_nowait({"type": "session.idle", "properties": {"sessionID": "ses_1"}})
    assert queue.arrived.is_set()
    assert queue.qsize() == 2


async def test_text_after_other_events_is_not_held() -> None:
    queue: PacedQueue[StreamEvent] = PacedQueue()
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(10):
        stream = batches(queue, as_is)
        queue.put_nowait(TOOL)
        assert await anext(stream) == (TOOL,)
        queue.put_nowait(Text(delta="answer"))
        asked = loop.time()
        assert await anext(stream) == (Text(delta="answer"),)
        assert loop.time() - asked < TEXT_PACE
        queue.put_nowait(Text(delta=" more"))
        asked = loop.time()
        assert await anext(stream) == (Text(delta=" more"),)  # text after text waits out the pace
        assert loop.time() - asked >= TEXT_PACE * 0.9
        queue.put_nowait(Done(outcome="completed"))
        assert await anext(stream) == (Done(outcome="completed"),)


async def test_a_burst_already_waiting_is_one_batch_and_ends_at_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "BURST_SLICE", 1.0)  # a loaded machine must not split the burst by time
    queue: PacedQueue[StreamEvent] = PacedQueue()
    for event in (Text(delta="a"), Text(delta="b"), TOOL, Text(delta="c"), Done(outcome="completed"), Text(delta="x")):
        queue.put_nowait(event)
    async with asyncio.timeout(10):
        got = [batch for _, batch in await collect(queue)]
    assert got == [(Text(delta="ab"), TOOL, Text(delta="c"), Done(outcome="completed"))]
