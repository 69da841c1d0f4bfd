"""a2a-sdk's request handler as the rest of the agent calls it; every binding (JSON-RPC, REST, gRPC; 1.0 and 0.3)
reaches the SDK through it.

Two things differ from the SDK's own handler, which does the work:
- A task it returns whole (the unary reply, GetTask, ListTasks, CancelTask, a subscription's first snapshot)
  shows each answer as one text part (state/whole_answers.py); streamed events stay as they are.
- A message to a task that has ended is refused here, with the SDK's own error, before the SDK builds the
  machinery of a running task for it: it would start two queue dispatchers, never stop them, and asyncio
  would log "Task was destroyed but it is pending!" twice for every such message.
"""

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
)
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from a2a_wrapper.frontend.handler.delegating_handler import DelegatingHandler
from a2a_wrapper.state.whole_answers import whole_answers


class SdkHandler(DelegatingHandler):
    """The methods not written here (push configs, the extended card, `aclose`) are the SDK's own."""

    def __init__(self, sdk: DefaultRequestHandler) -> None:
        super().__init__(sdk)
        self._sdk = sdk

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        await self._refuse_ended(params, context)
        result = await self._sdk.on_message_send(params, context)
        return whole_answers(result) if isinstance(result, Task) else result

    def on_message_send_stream(self, params: SendMessageRequest, context: ServerCallContext) -> AsyncGenerator[Event]:
        """A message that names no task (most) gets the SDK's stream itself: no generator here that every event
        would pass."""
        if not params.message.task_id:
            return self._sdk.on_message_send_stream(params, context)
        return self._stream_unless_ended(params, context)

    async def _stream_unless_ended(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        await self._refuse_ended(params, context)
        async with aclosing(self._sdk.on_message_send_stream(params, context)) as events:
            async for event in events:
                yield event

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

    async def _refuse_ended(self, params: SendMessageRequest, context: ServerCallContext) -> None:
        """The SDK's refusal of a message to an ended task, raised before the SDK starts anything for it."""
        task_id = params.message.task_id
        if not task_id:
            return
        try:
            task = await self._sdk.on_get_task(GetTaskRequest(tenant=params.tenant, id=task_id), context)
        except TaskNotFoundError:
            return  # the SDK answers that one itself, naming the task
        if task is not None and task.status.state in TERMINAL_TASK_STATES:
            state = TaskState.Name(task.status.state)
            raise UnsupportedOperationError(message=f"Task {task_id} is in terminal state: {state}")
