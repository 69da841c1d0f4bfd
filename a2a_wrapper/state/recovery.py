"""Tasks whose turn died end `failed`, with a sentence: at start, those a previous run left `submitted` or
`working`; on shared state, those of a replica whose lease ran out (state/orphans.py sweeps them).

Their backend turn died with that run; leaving them `working` would make callers wait forever.
"""

import logging
import math
import time
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


def lost_with(replica: str) -> str:
    """The sentence of a task whose replica stopped renewing its lease on the task's context."""
    return (
        f"Replica {replica}, which ran this task, stopped while the task was running or waiting for a person "
        "(its lease on the context ran out); its turn was lost. Send the message again."
    )


def unfinished(stored: StoredTask) -> bool:
    return stored.state in _UNFINISHED


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
    store: VersionedTaskStore,
    candidates: Sequence[StoredTask],
    submitted_before: float = math.inf,
    sentence: str = INTERRUPTED,
) -> int:
    """On shared state: the unfinished ones of `candidates`, whose replica is gone (its lease on their context
    expired, or no replica holds it), end `failed` with `sentence`, as a versioned write whose event reaches
    their subscribers on every replica. A task some replica advanced meanwhile is alive: left alone. A
    `submitted` one only if it was submitted before `submitted_before` (Unix time): a live replica's new task is
    `submitted` until its turn takes the context's lease (the turn taking a context over is one)."""
    failed = 0
    for stored in candidates:
        if not unfinished(stored):
            continue
        context = as_owner(stored.owner)
        found = await store.get(stored.id, context)
        if found is None or (_submitted(found.task) and _since(found.task) >= submitted_before):
            continue
        task = Task()
        task.CopyFrom(found.task)
        _fail(task, sentence)
        event = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)
        try:
            await store.save(task, event=event, prev=found.task, prev_version=found.version, context=context)
        except ConcurrentTaskModificationError:
            continue
        failed += 1
    if failed:
        log.warning("%d task(s) left unfinished by a replica that stopped were marked failed", failed)
    return failed


def _submitted(task: Task) -> bool:
    return task.status.state == TaskState.TASK_STATE_SUBMITTED


def _since(task: Task) -> float:
    """When the task's status was set (Unix time); a status without a time counts as now (not orphaned yet)."""
    return task.status.timestamp.ToDatetime(UTC).timestamp() if task.status.HasField("timestamp") else time.time()


def _fail(task: Task, sentence: str = INTERRUPTED) -> None:
    fail_with(task, sentence)


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
