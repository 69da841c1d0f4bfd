"""How a turn's events are batched (backends/kit/stream.py): bursts joined, a flowing answer paced, nothing lost.

Pure: a queue fed by a producer task stands for an adapter's protocol; what is asserted is what the A2A side
would send, one artifact chunk per batch of text.
"""

import asyncio
import itertools

import pytest

from a2a_wrapper.backends.base import Batch
from a2a_wrapper.backends.kit import stream as stream_module
from a2a_wrapper.backends.kit.stream import TEXT_PACE, as_is, batches
from a2a_wrapper.events import Done, StreamEvent, Text, ToolCall

TOOL = ToolCall(id="t1", tool="bash", kind="execute", title="ls", status="pending")


async def collect(queue: "asyncio.Queue[StreamEvent]") -> list[tuple[float, Batch]]:
    loop = asyncio.get_running_loop()
    return [(loop.time(), batch) async for batch in batches(queue, as_is)]


async def test_a_fast_answer_is_paced_into_few_chunks_and_keeps_every_delta() -> None:
    queue: asyncio.Queue[StreamEvent] = asyncio.Queue()
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
    queue: asyncio.Queue[StreamEvent] = asyncio.Queue()
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
        queue.put_nowait(behind)  # ...until this arrives, which ends the wait with it
        assert await next_batch == (Text(delta=" last"), behind)
        assert loop.time() - asked < 0.25


async def test_text_after_other_events_is_not_held() -> None:
    queue: asyncio.Queue[StreamEvent] = asyncio.Queue()
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
    queue: asyncio.Queue[StreamEvent] = asyncio.Queue()
    for event in (Text(delta="a"), Text(delta="b"), TOOL, Text(delta="c"), Done(outcome="completed"), Text(delta="x")):
        queue.put_nowait(event)
    async with asyncio.timeout(10):
        got = [batch for _, batch in await collect(queue)]
    assert got == [(Text(delta="ab"), TOOL, Text(delta="c"), Done(outcome="completed"))]
