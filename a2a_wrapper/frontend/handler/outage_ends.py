"""Streams a state database outage ends (state/outage.py) close with a final status, not with an error.

When a running task's state cannot be saved past `state.outage_wait`, a2a-sdk ends the task's streams by raising
the save's error to each of them. A caller would then hold a task id with no final state, and an error that says
nothing of the task. Here such a stream ends instead with a `failed` status update of its task carrying the
outage's sentence; the store writes the same once the database is back (state/shared_tasks.py). A stream that
had named no task yet ends with the error itself: no task was made.
"""

from collections.abc import AsyncGenerator

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.types import SendMessageRequest, SubscribeToTaskRequest, Task, TaskStatusUpdateEvent

from a2a_wrapper.frontend.handler.delegating_handler import DelegatingHandler
from a2a_wrapper.state.outage import StateUnavailable
from a2a_wrapper.state.recovery import fail_with


class OutageEnds(DelegatingHandler):
    def on_message_send_stream(self, params: SendMessageRequest, context: ServerCallContext) -> AsyncGenerator[Event]:
        return _ended_by_outage(self._inner.on_message_send_stream(params, context))

    def on_subscribe_to_task(self, params: SubscribeToTaskRequest, context: ServerCallContext) -> AsyncGenerator[Event]:
        return _ended_by_outage(self._inner.on_subscribe_to_task(params, context))


async def _ended_by_outage(events: AsyncGenerator[Event]) -> AsyncGenerator[Event]:
    task: Task | None = None  # the task the stream has named: its id and context
    try:
        async for event in events:
            if isinstance(event, Task | TaskStatusUpdateEvent) and task is None:
                task = event if isinstance(event, Task) else Task(id=event.task_id, context_id=event.context_id)
            yield event
    except StateUnavailable as exc:
        if task is None:
            raise
        ended = Task(id=task.id, context_id=task.context_id)
        fail_with(ended, exc.message)
        yield TaskStatusUpdateEvent(task_id=ended.id, context_id=ended.context_id, status=ended.status)
    finally:
        await events.aclose()
