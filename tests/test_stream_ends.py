"""A stream ends soon after the event that puts its task in a terminal state (frontend/handler/sdk_handler.py).

a2a-sdk 1.3.0 ends a subscriber's stream only when the task's queues are torn down, and a cancel can skip that (the
producer's cancel landing inside its own `finally`): the subscriber then waited for ever after the canceled status.
The race itself cannot be forced from outside the SDK, so here an inner handler stands for the SDK in that state:
it yields a stream's events and then never ends. What is asserted is what a client reads, and that the inner
stream is closed (its `finally` ran), as the SDK's own clean-up needs.
"""

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.types import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from a2a_wrapper.frontend.handler import sdk_handler
from a2a_wrapper.frontend.handler.sdk_handler import SdkHandler


def status(state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id="t", context_id="c", status=TaskStatus(state=state))


WORKING = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))


class Stuck:
    """Yields its events, then waits for ever, as a subscriber whose queue is never closed; notes that it closed."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.closed = False

    async def stream(self, *args: Any) -> AsyncGenerator[Event]:
        try:
            for event in self.events:
                yield event
            await asyncio.Event().wait()
        finally:
            self.closed = True

    on_subscribe_to_task = stream
    on_message_send_stream = stream


@pytest.fixture(autouse=True)
def short_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sdk_handler, "SETTLE_AFTER_END", 0.05)


async def read(stream: AsyncGenerator[Event]) -> list[Event]:
    async with asyncio.timeout(2):
        return [event async for event in stream]


@pytest.mark.parametrize(
    "end",
    [TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED],
    ids=["canceled", "completed", "failed"],
)
async def test_a_subscription_ends_with_its_tasks_terminal_status(end: TaskState) -> None:
    inner = Stuck([WORKING, status(TaskState.TASK_STATE_WORKING), status(end)])
    handler = SdkHandler(cast(DefaultRequestHandler, inner))
    events = await read(handler.on_subscribe_to_task(SubscribeToTaskRequest(id="t"), ServerCallContext()))
    assert [e.status.state for e in events] == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_WORKING, end]
    assert inner.closed


async def test_a_streamed_message_ends_with_its_tasks_terminal_status() -> None:
    inner = Stuck([WORKING, status(TaskState.TASK_STATE_CANCELED)])
    handler = SdkHandler(cast(DefaultRequestHandler, inner))
    message = Message(message_id="m", role=Role.ROLE_USER, parts=[Part(text="hi")])
    events = await read(handler.on_message_send_stream(SendMessageRequest(message=message), ServerCallContext()))
    assert [e.status.state for e in events] == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_CANCELED]
    assert inner.closed


async def test_a_stream_paused_for_a_person_is_the_sdks_to_end() -> None:
    """input-required is not terminal: the stream goes on until the SDK ends it (here: never, so it times out)."""
    inner = Stuck([WORKING, status(TaskState.TASK_STATE_INPUT_REQUIRED)])
    handler = SdkHandler(cast(DefaultRequestHandler, inner))
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            [event async for event in handler.on_subscribe_to_task(SubscribeToTaskRequest(id="t"), ServerCallContext())]
