"""a2a-sdk's task queues on LoopQueue with 3.13's shutdown (frontend/compat/sdk_queues.py): the semantics the SDK relies
on, raising the SDK's QueueShutDown, that every queue the SDK makes is one, and that a streamed message still runs
through them."""

import asyncio
import uuid

import a2a
import pytest
from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext, active_task
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.events.event_queue_v2 import EventQueueSource
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    Message,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils._async_queue_compat import QueueShutDown

from a2a_wrapper.frontend.compat.sdk_queues import SDK_MODULES, SdkQueue, use_loop_queues
from tests.helpers.package_source import modules_naming


async def test_put_after_shutdown_is_refused_and_get_drains_what_was_queued() -> None:
    queue: SdkQueue[int] = SdkQueue()
    await queue.put(1)
    queue.put_nowait(2)
    queue.shutdown()
    with pytest.raises(QueueShutDown):
        await queue.put(3)
    with pytest.raises(QueueShutDown):
        queue.put_nowait(3)
    assert [await queue.get(), queue.get_nowait()] == [1, 2]
    with pytest.raises(QueueShutDown):
        await queue.get()
    with pytest.raises(QueueShutDown):
        queue.get_nowait()


async def test_an_empty_queue_still_says_empty_before_shutdown() -> None:
    with pytest.raises(asyncio.QueueEmpty):
        SdkQueue[int]().get_nowait()
    full: SdkQueue[int] = SdkQueue(maxsize=1)
    full.put_nowait(1)
    with pytest.raises(asyncio.QueueFull):
        full.put_nowait(2)


async def test_immediate_shutdown_drops_the_queued_items_and_releases_join() -> None:
    queue: SdkQueue[int] = SdkQueue()
    for item in range(3):
        queue.put_nowait(item)
    assert queue.get_nowait() == 0  # taken, not yet done: join still waits for it
    joined = asyncio.create_task(queue.join())
    queue.shutdown(immediate=True)
    assert queue.empty()
    await asyncio.sleep(0)
    assert not joined.done()
    queue.task_done()
    await asyncio.wait_for(joined, 1)
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_a_getter_waiting_on_an_empty_queue_is_woken_by_shutdown() -> None:
    queue: SdkQueue[int] = SdkQueue()
    getters = [asyncio.create_task(queue.get()) for _ in range(2)]
    await asyncio.sleep(0)
    queue.shutdown()
    for getter in getters:
        with pytest.raises(QueueShutDown):
            await asyncio.wait_for(getter, 1)


async def test_a_putter_waiting_on_a_full_queue_is_woken_by_shutdown() -> None:
    queue: SdkQueue[int] = SdkQueue(maxsize=1)
    queue.put_nowait(1)
    putter = asyncio.create_task(queue.put(2))
    await asyncio.sleep(0)
    queue.shutdown()
    with pytest.raises(QueueShutDown):
        await asyncio.wait_for(putter, 1)
    assert queue.get_nowait() == 1 and queue.empty()


async def test_a_cancelled_getter_passes_its_wake_up_on() -> None:
    queue: SdkQueue[int] = SdkQueue()
    first, second = asyncio.create_task(queue.get()), asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.put_nowait(7)  # wakes `first`, which is cancelled before it runs
    first.cancel()
    assert await asyncio.wait_for(second, 1) == 7


async def test_a_putter_gets_in_when_room_is_made() -> None:
    queue: SdkQueue[int] = SdkQueue(maxsize=1)
    queue.put_nowait(1)
    putter = asyncio.create_task(queue.put(2))
    await asyncio.sleep(0)
    assert queue.get_nowait() == 1
    await asyncio.wait_for(putter, 1)
    assert queue.get_nowait() == 2


def test_every_sdk_module_that_makes_queues_is_covered() -> None:
    """An SDK upgrade that makes queues somewhere else would leave those on culsans, unseen."""
    assert modules_naming(a2a, "create_async_queue") == {module.__name__ for module in SDK_MODULES}


async def test_the_sdk_makes_its_queues_as_loop_queues() -> None:
    use_loop_queues()
    source = EventQueueSource()
    sink = await source.tap()
    assert isinstance(source.queue, SdkQueue) and isinstance(sink.queue, SdkQueue)
    assert isinstance(active_task.create_async_queue(), SdkQueue)
    await source.close(immediate=True)


class _FiveEvents(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id and context.message
        task = Task(
            id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[context.message],
        )
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.update_status(TaskState.TASK_STATE_WORKING)
        await updater.add_artifact([new_text_part("one ")], artifact_id="answer", name="response")
        await updater.add_artifact([new_text_part("two")], artifact_id="answer", append=True, last_chunk=True)
        await updater.update_status(TaskState.TASK_STATE_COMPLETED)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


async def test_a_streamed_message_runs_through_the_sdk_on_loop_queues() -> None:
    use_loop_queues()
    card = AgentCard(name="queues", capabilities=AgentCapabilities(streaming=True))
    handler = DefaultRequestHandler(_FiveEvents(), InMemoryTaskStore(), card)
    context = ServerCallContext()
    for _ in range(3):  # a context's second and third messages too: the first task's queues were shut cleanly
        message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[new_text_part("hi")])
        message.context_id = "ctx"
        kinds = [
            type(event).__name__
            async for event in handler.on_message_send_stream(SendMessageRequest(message=message), context)
        ]
        assert kinds == [
            "Task",
            "TaskStatusUpdateEvent",
            "TaskArtifactUpdateEvent",
            "TaskArtifactUpdateEvent",
            "TaskStatusUpdateEvent",
        ]
    await handler.aclose()
