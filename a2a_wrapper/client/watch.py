"""Watching a task paused for a person while they are asked: A2A's subscribe to the paused task.

The stream closing or breaking means the agent stopped; a terminal status means the task ended on its own (its
deadline denied the request and the agent went on, or someone canceled it). What the task does meanwhile is
shown in the live view. An agent that refuses to be watched is not watched: only the answer ends the wait.
"""

import logging
from dataclasses import dataclass

import httpx
from a2a.client import Client
from a2a.types import GetTaskRequest, SubscribeToTaskRequest, TaskState, TaskStatus
from a2a.utils.errors import A2AError

from a2a_wrapper.client.view import LiveView

log = logging.getLogger(__name__)
TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_CANCELED,
}


@dataclass(frozen=True)
class Gone:
    """The wait for the person ended without an answer."""

    status: TaskStatus | None  # the task's terminal status; None: the agent stopped


class PromptLine:
    """The prompt's line, left open for the answer; ended once when something else is shown instead."""

    def __init__(self, view: LiveView) -> None:
        self._view = view
        self._open = True

    def end(self) -> None:
        if self._open:
            self._view.line("")
            self._open = False


async def watch_paused(client: Client, task_id: str, view: LiveView, prompt: PromptLine) -> Gone | None:
    """Returns when the paused task ends or its agent goes away; None at once when the agent offers no watch.
    What the task does meanwhile (its deadline denied the request, and the agent went on) is shown."""
    try:
        async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
            if not event.HasField("task"):  # the first event is the paused task itself, already shown
                prompt.end()
                view.show(event)
            status = event.status_update.status if event.HasField("status_update") else event.task.status
            if status.state in TERMINAL:
                return Gone(status)
    except A2AError as exc:
        if not isinstance(exc.__cause__, httpx.RequestError):  # the agent is there and refuses to be watched
            return await _unwatched(client, task_id, exc)
    return Gone(None)  # the stream closed or broke: the agent stopped


async def _unwatched(client: Client, task_id: str, refusal: A2AError) -> Gone | None:
    """A refused subscription: a task that ended meanwhile is terminal; else nothing can be watched (None)."""
    try:
        current = await client.get_task(GetTaskRequest(id=task_id))
    except A2AError as exc:
        if isinstance(exc.__cause__, httpx.RequestError):
            return Gone(None)
        current = None
    if current is not None and current.status.state in TERMINAL:
        return Gone(current.status)
    log.debug("task %s cannot be watched while the person is asked: %s", task_id, refusal)
    return None
