"""a2a-sdk's request handler as the rest of the agent calls it; every binding (JSON-RPC, REST, gRPC; 1.0 and 0.3)
reaches the SDK through it.

Three things differ from the SDK's own handler, which does the work:
- A task it returns whole (the unary reply, GetTask, ListTasks, CancelTask, a subscription's first snapshot)
  shows each answer as one text part (state/whole_answers.py); streamed events stay as they are.
- A message to a task that has ended is refused here, with the SDK's own error, before the SDK builds the
  machinery of a running task for it: it would start two queue dispatchers, never stop them, and asyncio
  would log "Task was destroyed but it is pending!" twice for every such message.
- A streamed message to a task that exists (an answer to `input-required`, say) begins with the Task, as it stood
  when the message arrived: "the stream MUST begin with the Task object" (A2A §3.1.2). The SDK streams only the
  events the message causes, so such a stream began with a status update, on every binding. The Task goes out
  with the SDK's first event, so a message the SDK refuses (another context's, say) is still refused first.
- A stream (a streamed message's, a subscription's) ends at most SETTLE_AFTER_END after the event that puts its
  task in a terminal state. The SDK ends it when its task's queues are torn down, by which time the task's end
  is on disk (state/task_store.py writes it one pass of the loop after the event went out); but a cancel can
  skip that teardown: when the turn ends during `ActiveTask.cancel`, the producer's cancel can land inside its
  own `finally`, before it closes the subscribers' queues, and a subscriber then waited for ever after the
  canceled status (1 run in 15-40 of tests/test_grpc_binding.py's cancel test under load, traced with the
  SDK's debug log).
"""

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from contextlib import aclosing

from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError
from a2a.utils.task import apply_history_length

from a2a_wrapper.frontend.handler.delegating_handler import DelegatingHandler
from a2a_wrapper.state.whole_answers import whole_answers

SETTLE_AFTER_END = 2.0  # seconds the SDK has to end a stream after its task's terminal event


class SdkHandler(DelegatingHandler):
    """The methods not written here (push configs, the extended card, `aclose`) are the SDK's own."""

    def __init__(self, sdk: DefaultRequestHandler) -> None:
        super().__init__(sdk)
        self._sdk = sdk

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        await self._task_continued(params, context)
        result = await self._sdk.on_message_send(params, context)
        return whole_answers(result) if isinstance(result, Task) else result

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        continued = await self._task_continued(params, context)
        async with aclosing(self._sdk.on_message_send_stream(params, context)) as events:
            async for event in events:
                if continued is not None:  # shown once the SDK took the message: its refusals stay first
                    if not isinstance(event, Task | Message):
                        yield apply_history_length(whole_answers(continued), params.configuration)
                    continued = None
                yield event
                if _ends_task(event):
                    await _settled(events)
                    return

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        task = await self._sdk.on_get_task(params, context)
        return whole_answers(task) if task is not None else None

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        page = await self._sdk.on_list_tasks(params, context)
        for task in page.tasks:
            joined = whole_answers(task)
            if joined is not task:
                task.CopyFrom(joined)
        return page

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        task = await self._sdk.on_cancel_task(params, context)
        return whole_answers(task) if task is not None else None

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        async with aclosing(self._sdk.on_subscribe_to_task(params, context)) as events:
            async for event in events:
                yield whole_answers(event) if isinstance(event, Task) else event
                if _ends_task(event):
                    await _settled(events)
                    return

    async def _task_continued(self, params: SendMessageRequest, context: ServerCallContext) -> Task | None:
        """The task the message continues, as it stands (None for a new task, or one the caller cannot see: the
        SDK answers that itself, naming the task); the SDK's refusal of a message to an ended task is raised here,
        before the SDK starts anything for it."""
        task_id = params.message.task_id
        if not task_id:
            return None
        try:
            task = await self._sdk.on_get_task(GetTaskRequest(tenant=params.tenant, id=task_id), context)
        except TaskNotFoundError:
            return None
        if task is not None and task.status.state in TERMINAL_TASK_STATES:
            state = TaskState.Name(task.status.state)
            raise UnsupportedOperationError(message=f"Task {task_id} is in terminal state: {state}")
        return task


async def _settled(events: AsyncGenerator[Event]) -> None:
    """The SDK's own end of a stream whose task has ended (nothing of the task follows), within SETTLE_AFTER_END."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(SETTLE_AFTER_END):
            async for _ in events:
                pass


def _ends_task(event: Event) -> bool:
    """Whether `event` puts its task in a terminal state: nothing of the task follows it."""
    if isinstance(event, TaskStatusUpdateEvent | Task):
        return event.status.state in TERMINAL_TASK_STATES
    return False
