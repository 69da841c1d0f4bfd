"""Send one message, follow its task to the end: stream it, ask the person when it pauses, answer, go on.

Exit codes: 0 when the task completed; 1 when it failed, was rejected or canceled (its sentence on stderr),
or when it could not go on (the stream broke, stdin closed while the agent waited: the task is then canceled;
the agent went away while the person was asked).

While the person is asked, the paused task is watched (see watch.py): the agent stopping, or the task ending on
its own, ends the wait with a sentence instead of a prompt that fails only once answered.
"""

import asyncio
import sys
import uuid
from dataclasses import dataclass
from typing import TextIO

import httpx
from a2a.client import Client
from a2a.helpers import new_text_part
from a2a.types import (
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import A2AError

from a2a_wrapper.client.answers import Request, reply_parts, request_of
from a2a_wrapper.client.connect import KEY_HINT, SendError, client_for, fetch_card, http_client
from a2a_wrapper.client.prompt import Ask, read_line
from a2a_wrapper.client.view import LiveView, text_of
from a2a_wrapper.client.watch import Gone, PromptLine, watch_paused

STOPPED = "the agent stopped while waiting for your answer: task {id} cannot go on (send the message again)"
ENDED = "the task ended while waiting for your answer"
_FAILED = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_CANCELED: "canceled",
    TaskState.TASK_STATE_AUTH_REQUIRED: "needs authentication",
}


@dataclass
class _Task:
    id: str = ""
    context_id: str = ""
    status: TaskStatus | None = None


async def send(
    url: str,
    text: str,
    context_id: str | None = None,
    key: str | None = None,
    headers: dict[str, str] | None = None,
    raw: bool = False,
    ask: Ask | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Runs the task to its end; returns the exit code."""
    view = LiveView(out, err, raw)
    async with http_client(key, headers) as http:
        client = client_for(await fetch_card(http, url), http)
        message = _message([new_text_part(text)], context_id=context_id)
        task = _Task()
        while True:
            await _follow(client, message, task, view)
            state = task.status.state if task.status is not None else TaskState.TASK_STATE_UNSPECIFIED
            if state != TaskState.TASK_STATE_INPUT_REQUIRED:
                return _finish(task, state, view)
            assert task.status is not None
            ask = ask or read_line(err)
            parts = await _answer_or_gone(client, task, request_of(task.status), view, ask)
            if isinstance(parts, Gone):
                return _gone(parts, task, view)
            if parts is None:
                view.line(f"no answer (end of input): canceling task {task.id}")
                await client.cancel_task(CancelTaskRequest(id=task.id))
                return 1
            message = _message(parts, context_id=task.context_id, task_id=task.id)


async def _follow(client: Client, message: Message, task: _Task, view: LiveView) -> None:
    """Streams one request of the task; `task` holds its ids and its last status."""
    try:
        async for event in client.send_message(SendMessageRequest(message=message)):
            view.show(event)
            kind = event.WhichOneof("payload")
            if kind == "task":
                task.id, task.context_id, task.status = event.task.id, event.task.context_id, event.task.status
            elif kind == "status_update":
                task.status = event.status_update.status
            elif kind == "message":
                task.status = TaskStatus(state=TaskState.TASK_STATE_COMPLETED)  # a reply without a task
    except A2AError as exc:
        raise SendError(_client_error(exc)) from exc


def _finish(task: _Task, state: TaskState, view: LiveView) -> int:
    view.close()
    if state == TaskState.TASK_STATE_COMPLETED:
        if task.context_id:
            view.line(f"[context {task.context_id}]")
        return 0
    sentence = text_of(task.status.message.parts) if task.status is not None else ""
    what = _FAILED.get(state) or f"stopped before the end ({TaskState.Name(state)})"
    view.line(f"task {what}: {sentence}" if sentence else f"task {what}")
    return 1


async def _answer_or_gone(
    client: Client, task: _Task, request: Request, view: LiveView, ask: Ask
) -> list[Part] | Gone | None:
    """The person's answer, unless the agent goes away (or the task ends) first."""
    view.close()
    if request.tool is not None:
        view.announce(request.tool)
    for line in request.lines:
        view.line(line)
    answering = asyncio.create_task(_answer(request, ask), name="answer")
    prompt = PromptLine(view)
    watching = asyncio.create_task(watch_paused(client, task.id, view, prompt), name="watch-task")
    try:
        await asyncio.wait({answering, watching}, return_when=asyncio.FIRST_COMPLETED)
        if not answering.done() and watching.result() is None:  # nothing to watch: only the answer ends the wait
            await answering
    finally:
        for waiting in (answering, watching):
            waiting.cancel()
        await asyncio.gather(answering, watching, return_exceptions=True)
    if answering.done() and not answering.cancelled():
        return answering.result()
    gone = watching.result()
    assert gone is not None
    prompt.end()
    return gone


async def _answer(request: Request, ask: Ask) -> list[Part] | None:
    while True:
        typed = await ask(request.prompt)
        if typed is None:
            return None
        parts = reply_parts(request, typed)
        if parts is not None:
            return parts


def _gone(gone: Gone, task: _Task, view: LiveView) -> int:
    if gone.status is None:
        view.line(STOPPED.format(id=task.id))
        return 1
    task.status = gone.status
    view.line(ENDED)
    return _finish(task, gone.status.state, view)


def _message(parts: list[Part], context_id: str | None = None, task_id: str | None = None) -> Message:
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=parts)
    if context_id:
        message.context_id = context_id
    if task_id:
        message.task_id = task_id
    return message


def _client_error(exc: A2AError) -> str:
    cause = exc.__cause__
    if isinstance(cause, httpx.HTTPStatusError) and cause.response.status_code in (401, 403):
        return f"the agent refused the call (HTTP {cause.response.status_code}): {KEY_HINT}"
    if isinstance(cause, httpx.RequestError):
        return f"lost the agent: {cause or type(cause).__name__}"
    return f"the agent answered with an error: {exc}"
