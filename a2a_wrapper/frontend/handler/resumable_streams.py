"""Streams a client can resume: every event a task's stream carries has an id, and a stream asked for with the last
id the client saw gives the events after it, once each and in order, then the live ones.

- The id is `<task id>:<position>`, the event's position in its task (state/event_journal.py). On SSE (JSON-RPC
  and REST) it is the event's `id:` field (compat/event_stream_response.py writes it), so a browser's EventSource
  and any SSE client send it back as `Last-Event-ID` when they reconnect. gRPC has no field for it: there the id
  is in the event's own metadata, under `EVENT_ID_KEY`, and the client sends it back as the call metadata
  `last-event-id`. Events that are not the task's own (the Task a stream begins with, a snapshot) carry no id; an
  SSE client then keeps the last one it had.
- SubscribeToTask or SendStreamingMessage with `Last-Event-ID` resumes: the events after it, from the journal,
  up to the one that ends or pauses the task, as the first stream would have ended. A resumed SendStreamingMessage
  is the same message sent again, not run again: it must be one the id's task holds (its messageId in the task's
  history), and a task or context it names must be that task's. A task that ended can still be resumed, up to its end.
- An id that is not one (its form), names another task than the request, names a task the caller cannot see, or
  is not an event the journal holds (never given, or no longer kept) is refused with InvalidParams (or
  TaskNotFound) and a sentence: never a silent restart from the start.
"""

from collections.abc import AsyncGenerator, Collection
from contextlib import aclosing

from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import RequestHandler
from a2a.types import (
    GetTaskRequest,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

from a2a_wrapper.frontend.compat.event_stream_response import EVENT_ID
from a2a_wrapper.frontend.grpc_callers import GRPC_CALL
from a2a_wrapper.frontend.handler.delegating_handler import DelegatingHandler
from a2a_wrapper.state.event_journal import EventJournal
from a2a_wrapper.state.task_store import RESTING

LAST_EVENT_ID = "last-event-id"  # the SSE header, and the gRPC metadata of the same name
EVENT_ID_KEY = "a2a-wrapper/event-id"  # on gRPC: where an event's id is, in its metadata

NOT_AN_ID = "Last-Event-ID {id!r} is not an event id this agent gave (they look like '<task id>:<number>')"
OTHER_TASK = "Last-Event-ID {id!r} is an event of task {of}, but this request names task {named}"
OTHER_CONTEXT = "Last-Event-ID {id!r} is an event of task {of}, in context {context}, but this message names {named}"
NOT_SENT = (
    "Last-Event-ID {id!r} resumes the stream of a message task {of} holds, and message {message!r} is not one: "
    "a new message is sent without Last-Event-ID. Nothing was run."
)
UNKNOWN = (
    "Last-Event-ID {id!r} is not an event of task {of} that this agent still holds (never sent, or no longer "
    "kept): nothing can be resumed from it. GetTask gives the task as it is, and SubscribeToTask without "
    "Last-Event-ID its events from now on."
)


class ResumableStreams(DelegatingHandler):
    def __init__(self, inner: RequestHandler, journal: EventJournal) -> None:
        super().__init__(inner)
        self._journal = journal

    def on_message_send_stream(self, params: SendMessageRequest, context: ServerCallContext) -> AsyncGenerator[Event]:
        last = _last_event_id(context)
        if last is None:
            return self._stamped(self._inner.on_message_send_stream(params, context), context)
        return self._resumed(last, params.tenant, params.message.task_id, context, params.message)

    def on_subscribe_to_task(self, params: SubscribeToTaskRequest, context: ServerCallContext) -> AsyncGenerator[Event]:
        last = _last_event_id(context)
        if last is None:
            return self._stamped(self._inner.on_subscribe_to_task(params, context), context)
        return self._resumed(last, params.tenant, params.id, context)

    async def _stamped(self, events: AsyncGenerator[Event], context: ServerCallContext) -> AsyncGenerator[Event]:
        on_grpc = bool(context.state.get(GRPC_CALL))
        async with aclosing(events):
            async for event in events:
                task_id = _task_of(event)
                position = self._journal.position_of(task_id, event) if task_id else None
                yield _with_id(event, f"{task_id}:{position}" if position is not None else None, on_grpc)

    async def _resumed(
        self, last: str, tenant: str, task_named: str, context: ServerCallContext, message: Message | None = None
    ) -> AsyncGenerator[Event]:
        """The events after `last`, for SubscribeToTask or for `message` sent again."""
        task_id, position = _parsed(last)
        if task_named and task_named != task_id:
            raise InvalidParamsError(message=OTHER_TASK.format(id=last, of=task_id, named=task_named))
        task = await self._inner.on_get_task(GetTaskRequest(tenant=tenant, id=task_id), context)
        if task is None:  # another caller's task reads as none at all
            raise TaskNotFoundError
        if message is not None:
            _check_sent_before(message, task, last)
        seen = await self._journal.event_at(task_id, position)
        if seen is None:
            raise InvalidParamsError(message=UNKNOWN.format(id=last, of=task_id))
        if _ends(seen, TERMINAL_TASK_STATES):
            return  # the client saw the task's end: nothing follows it
        on_grpc = bool(context.state.get(GRPC_CALL))
        async with aclosing(self._journal.events_after(task_id, position)) as events:
            async for after, event in events:
                yield _with_id(event, f"{task_id}:{after}", on_grpc)
                if _pauses_or_ends(event):
                    return


def _check_sent_before(message: Message, task: Task, last: str) -> None:
    """A message a stream is resumed for must be one the task holds: one it would otherwise run is never dropped."""
    if message.context_id and message.context_id != task.context_id:
        raise InvalidParamsError(
            message=OTHER_CONTEXT.format(id=last, of=task.id, context=task.context_id, named=message.context_id)
        )
    if all(held.message_id != message.message_id for held in task.history):
        raise InvalidParamsError(message=NOT_SENT.format(id=last, message=message.message_id, of=task.id))


def _last_event_id(context: ServerCallContext) -> str | None:
    headers = context.state.get("headers") or {}
    value = headers.get(LAST_EVENT_ID)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _parsed(last: str) -> tuple[str, int]:
    task_id, _, position = last.rpartition(":")
    if not task_id or not position.isdigit():
        raise InvalidParamsError(message=NOT_AN_ID.format(id=last))
    return task_id, int(position)


def _task_of(event: Event) -> str:
    if isinstance(event, Task):
        return event.id
    return "" if isinstance(event, Message) else event.task_id


def _with_id(event: Event, event_id: str | None, on_grpc: bool) -> Event:
    """The event as it leaves: its id for the SSE writer, and on gRPC in a copy's metadata."""
    EVENT_ID.set(event_id)
    if event_id is None or not on_grpc or isinstance(event, Message):
        return event
    stamped = type(event)()
    stamped.CopyFrom(event)
    stamped.metadata[EVENT_ID_KEY] = event_id
    return stamped


def _pauses_or_ends(event: Event) -> bool:
    """Whether the first stream ended with `event`. A Task in the log waiting for a person is not a pause: it is the
    task as a continuation found it (on shared state the answer's turn may begin by publishing it)."""
    if isinstance(event, TaskStatusUpdateEvent):
        return event.status.state in RESTING
    return _ends(event, TERMINAL_TASK_STATES)


def _ends(event: Event, states: Collection[TaskState]) -> bool:
    if isinstance(event, Message):
        return True
    return isinstance(event, Task | TaskStatusUpdateEvent) and event.status.state in states
