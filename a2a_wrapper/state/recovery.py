"""At start: tasks a previous run left `submitted` or `working` end `failed`, with a sentence.

Their backend turn died with that run; leaving them `working` would make callers wait forever.
"""

import logging
import uuid
from datetime import UTC, datetime

from a2a.auth.user import User
from a2a.helpers import new_text_part
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import Message, Role, TaskState, TaskStatus
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.sdk_tables import stored_tasks

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
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_AGENT,
            task_id=task.id,
            context_id=task.context_id,
            parts=[new_text_part(INTERRUPTED)],
        )
        task.status.CopyFrom(
            TaskStatus(state=TaskState.TASK_STATE_FAILED, message=message, timestamp=datetime.now(UTC))
        )
        await store.save(task, context)
        failed += 1
    if failed:
        log.warning("%d task(s) interrupted by the last stop were marked failed", failed)
    return failed
