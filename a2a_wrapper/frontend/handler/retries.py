"""Answers to a message sent again: the task its first attempt created, as it is now; the backend is not called.

SendMessage answers as GetTask would (with the request's history_length), once the task has ended or paused for
input, as the first attempt's answer would have (at once under returnImmediately). SendStreamingMessage streams
the task as SubscribeToTask would: its snapshot, then, while it runs, its live events to its end or pause; a task
already ended or paused streams its snapshot alone.
"""

from collections.abc import AsyncIterator

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import RequestHandler
from a2a.types import GetTaskRequest, Message, SendMessageRequest, SubscribeToTaskRequest, Task, TaskStatusUpdateEvent
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError
from a2a.utils.task import apply_history_length

from a2a_wrapper.state.task_store import RESTING


async def current_task(sdk: RequestHandler, task_id: str, params: SendMessageRequest, ctx: ServerCallContext) -> Task:
    """The task as the caller may see it now; TaskNotFoundError when it is gone (or another caller's)."""
    task = await sdk.on_get_task(GetTaskRequest(tenant=params.tenant, id=task_id), ctx)
    if task is None:
        raise TaskNotFoundError
    return task


async def repeated_send(sdk: RequestHandler, task: Task, params: SendMessageRequest, ctx: ServerCallContext) -> Task:
    if task.status.state not in RESTING and not params.configuration.return_immediately:
        async for _ in _live(sdk, task, params, ctx):
            pass
        task = await current_task(sdk, task.id, params, ctx)
    return apply_history_length(task, params.configuration)


async def repeated_stream(
    sdk: RequestHandler, task: Task, params: SendMessageRequest, ctx: ServerCallContext
) -> AsyncIterator[Event]:
    if task.status.state in RESTING:
        yield apply_history_length(task, params.configuration)
        return
    async for event in _live(sdk, task, params, ctx):
        yield apply_history_length(event, params.configuration) if isinstance(event, Task) else event


async def _live(
    sdk: RequestHandler, task: Task, params: SendMessageRequest, ctx: ServerCallContext
) -> AsyncIterator[Event]:
    """The task's snapshot, then its events until it ends or pauses."""
    events = sdk.on_subscribe_to_task(SubscribeToTaskRequest(tenant=params.tenant, id=task.id), ctx)
    try:
        async for event in events:
            yield event
            if _ends_turn(event):
                return
    except UnsupportedOperationError:  # the task ended between the caller's read and the subscription
        yield await current_task(sdk, task.id, params, ctx)
    finally:
        await events.aclose()


def _ends_turn(event: Event) -> bool:
    if isinstance(event, Message):
        return True
    return isinstance(event, Task | TaskStatusUpdateEvent) and event.status.state in RESTING
