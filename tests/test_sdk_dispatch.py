"""a2a-sdk's event queues deliver in the enqueueing call when nothing is ahead (compat/sdk_dispatch.py): the event
is in every sink at once, order holds behind a backlog, a full subscriber is still evicted, a closed source still
drops, and a streamed message through the SDK still gives its events."""

import asyncio
import uuid

import a2a
import pytest
from a2a.helpers import new_text_part
from a2a.server.agent_execution import active_task
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue_v2 import EventQueueSource
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, Message, Role, SendMessageRequest
from a2a.utils._async_queue_compat import QueueShutDown

from a2a_wrapper.frontend.compat.sdk_dispatch import DirectEventQueueSource, use_direct_dispatch
from a2a_wrapper.frontend.compat.sdk_queues import use_loop_queues
from a2a_wrapper.loop_queue import LoopQueue
from tests.helpers.package_source import modules_naming
from tests.test_sdk_queues import _FiveEvents


def _message(text: str) -> Message:
    return Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[new_text_part(text)])


async def _drain(queue: LoopQueue[Message]) -> list[str]:
    return [(await queue.get()).parts[0].text for _ in range(queue.qsize())]


async def test_an_event_is_in_every_sink_when_enqueue_returns() -> None:
    use_loop_queues()
    source = DirectEventQueueSource()
    subscriber = await source.tap()
    await source.enqueue_event(_message("one"))
    # no turn of the loop has passed: the dispatcher task has not run
    assert source.queue.qsize() == 1 and subscriber.queue.qsize() == 1
    assert (await source.dequeue_event()).parts[0].text == "one"  # type: ignore[union-attr]
    await source.close(immediate=True)


async def test_a_dispatcher_starts_only_for_an_event_that_must_wait() -> None:
    use_loop_queues()
    source = DirectEventQueueSource(max_queue_size=1)
    await source.enqueue_event(_message("one"))
    assert not source._dispatcher_started and source._dispatcher_task.done()
    await source.enqueue_event(_message("two"))  # the default sink is full: "two" waits for the dispatcher
    assert source._dispatcher_started and not source._dispatcher_task.done()
    await source.close(immediate=True)
    assert source._dispatcher_task.done()


async def test_a_source_holds_the_sdk_sources_attributes() -> None:
    """Its constructor is the SDK's but for the dispatcher: an SDK upgrade that adds state would show here."""
    use_loop_queues()
    ours, sdks = DirectEventQueueSource(), EventQueueSource()
    assert set(vars(ours)) == set(vars(sdks))
    for source in (ours, sdks):
        await source.close(immediate=True)


async def test_events_behind_a_full_sink_wait_in_order_and_then_all_arrive() -> None:
    use_loop_queues()
    source = DirectEventQueueSource(max_queue_size=2)
    for text in ("a", "b", "c", "d"):  # "c" finds the default sink full: it and "d" queue at the source
        await asyncio.wait_for(source.enqueue_event(_message(text)), 1)
    assert source.queue.qsize() == 2
    received = [(await source.dequeue_event()).parts[0].text for _ in range(2)]  # type: ignore[union-attr]
    for _ in range(2):
        source.task_done()
    await source.enqueue_event(_message("e"))  # the dispatcher may still hold "c" or "d": "e" goes behind them
    for _ in range(3):
        event = await asyncio.wait_for(source.dequeue_event(), 1)
        received.append(event.parts[0].text)  # type: ignore[union-attr]
        source.task_done()
    assert received == ["a", "b", "c", "d", "e"]
    await source.close(immediate=True)


async def test_a_graceful_close_waits_for_a_backlog_to_reach_the_sinks() -> None:
    use_loop_queues()
    source = DirectEventQueueSource(create_default_sink=False)
    sink = await source.tap(max_queue_size=1)
    for text in ("a", "b", "c"):  # "b" and "c" wait at the source for room in the sink
        await source.enqueue_event(_message(text))
    closing = asyncio.create_task(source.close(immediate=False))
    received = []
    for _ in range(3):
        received.append((await asyncio.wait_for(sink.dequeue_event(), 1)).parts[0].text)  # type: ignore[union-attr]
        sink.task_done()
    await asyncio.wait_for(closing, 1)
    assert received == ["a", "b", "c"] and sink.is_closed()


@pytest.mark.parametrize("immediate", [True, False])
async def test_closing_a_source_with_one_sink_starts_no_task_and_closes_every_sink(immediate: bool) -> None:
    use_loop_queues()
    loop = asyncio.get_running_loop()
    started: list[object] = []
    loop.set_task_factory(lambda loop, coro, **kw: started.append(coro) or asyncio.Task(coro, loop=loop, **kw))
    try:
        alone = DirectEventQueueSource()
        await alone.enqueue_event(_message("a"))
        if not immediate:
            alone.queue.get_nowait()
            alone.task_done()  # consumed: a graceful close has nothing to wait for
        await alone.close(immediate=immediate)
        assert started == [] and alone.is_closed()
        with pytest.raises(QueueShutDown):  # its one sink is closed
            await alone.dequeue_event()
        several = DirectEventQueueSource()
        taps = [await several.tap() for _ in range(2)]
        await several.close(immediate=True)
        assert all(sink.is_closed() for sink in taps)
        with pytest.raises(QueueShutDown):
            await several.dequeue_event()
    finally:
        loop.set_task_factory(None)


async def test_a_full_subscriber_is_evicted_by_the_sdk_and_the_others_go_on() -> None:
    use_loop_queues()
    source = DirectEventQueueSource(create_default_sink=False)
    slow = await source.tap(max_queue_size=1, evict_on_full=True)
    steady = await source.tap(max_queue_size=10)
    for text in ("a", "b", "c"):
        await source.enqueue_event(_message(text))
    await asyncio.wait_for(source.test_only_join_incoming_queue(), 1)
    assert slow.is_closed()
    assert await _drain(steady.queue) == ["a", "b", "c"]  # type: ignore[arg-type]
    await source.close(immediate=True)


async def test_a_closed_source_drops_an_event_as_the_sdk_does() -> None:
    use_loop_queues()
    source = DirectEventQueueSource()
    sink = await source.tap()
    await source.close(immediate=True)
    await source.enqueue_event(_message("late"))
    assert sink.queue.empty() and source.queue.empty()


def test_every_sdk_module_that_makes_event_sources_is_covered() -> None:
    """An SDK upgrade that makes its sources somewhere else would leave those on the SDK's dispatcher, unseen."""
    assert modules_naming(a2a, "EventQueueSource(") == {
        "a2a.server.events.event_queue_v2",  # where it is defined
        active_task.__name__,
    }


async def test_a_streamed_message_runs_through_the_sdk_on_direct_sources() -> None:
    use_loop_queues()
    use_direct_dispatch()
    assert active_task.EventQueueSource is DirectEventQueueSource
    card = AgentCard(name="dispatch", capabilities=AgentCapabilities(streaming=True))
    handler = DefaultRequestHandler(_FiveEvents(), InMemoryTaskStore(), card)
    context = ServerCallContext()
    for _ in range(3):
        message = _message("hi")
        message.context_id = "ctx"
        events = [event async for event in handler.on_message_send_stream(SendMessageRequest(message=message), context)]
        assert [type(event).__name__ for event in events] == [
            "Task",
            "TaskStatusUpdateEvent",
            "TaskArtifactUpdateEvent",
            "TaskArtifactUpdateEvent",
            "TaskStatusUpdateEvent",
        ]
        assert [part.text for event in events[2:4] for part in event.artifact.parts] == ["one ", "two"]  # type: ignore[union-attr]
    await handler.aclose()
