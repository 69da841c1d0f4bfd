"""At start: tasks a previous run left `submitted` or `working` end `failed`, with a sentence.

Their backend turn died with that run; leaving them `working` would make callers wait forever.
"""

import logging
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from a2a.auth.user import User
from a2a.helpers import new_text_part
from a2a.server.cluster import ConcurrentTaskModificationError, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import Message, Role, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.sdk_tables import StoredTask, stored_tasks

log = logging.getLogger(__name__)

INTERRUPTED = (
    "The agent restarted while this task was running or waiting for a person; its turn was lost."
    " Send the message again."
)
# Waiting for a person counts too: the backend request it waited on died with the last run (fail closed).
_UNFINISHED = {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"}


class _Owner(User):
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return bool(self._name)

    @property
    def user_name(self) -> str:
        return self._name


def as_owner(owner: str) -> ServerCallContext:
    """A call context that reaches the tasks of `owner` (a stored task's `owner`, "" without auth)."""
    return ServerCallContext(user=_Owner(owner))


async def fail_interrupted_tasks(engine: AsyncEngine, store: TaskStore) -> int:
    failed = 0
    for stored in await stored_tasks(engine):
        if stored.state not in _UNFINISHED:
            continue
        context = as_owner(stored.owner)
        task = await store.get(stored.id, context)
        if task is None:
            continue
        _fail(task)
        await store.save(task, context)
        failed += 1
    if failed:
        log.warning("%d task(s) interrupted by the last stop were marked failed", failed)
    return failed


async def fail_orphaned_tasks(
    store: VersionedTaskStore, candidates: Sequence[StoredTask], started_only: bool = False
) -> int:
    """On shared state: the unfinished ones of `candidates`, whose replica is gone (its lease on their context
    expired, or no replica holds it), end `failed` with the same sentence, as a versioned write whose event
    reaches their subscribers on every replica. A task some replica advanced meanwhile is alive: left alone.
    `started_only` leaves `submitted` ones too: the turn taking a context over is one (its turn starts after)."""
    states = _UNFINISHED - {"TASK_STATE_SUBMITTED"} if started_only else _UNFINISHED
    failed = 0
    for stored in candidates:
        if stored.state not in states:
            continue
        context = as_owner(stored.owner)
        found = await store.get(stored.id, context)
        if found is None:
            continue
        task = Task()
        task.CopyFrom(found.task)
        _fail(task)
        event = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)
        try:
            await store.save(task, event=event, prev=found.task, prev_version=found.version, context=context)
        except ConcurrentTaskModificationError:
            continue
        failed += 1
    if failed:
        log.warning("%d task(s) left unfinished by a replica that stopped were marked failed", failed)
    return failed


def _fail(task: Task) -> None:
    fail_with(task, INTERRUPTED)


def fail_with(task: Task, sentence: str) -> None:
    """`task` (changed in place) `failed` now, its status message `sentence`."""
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_AGENT,
        task_id=task.id,
        context_id=task.context_id,
        parts=[new_text_part(sentence)],
    )
    task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_FAILED, message=message, timestamp=datetime.now(UTC)))
