"""Tasks on shared state (PostgreSQL): a2a-sdk's cluster mode, what it keeps redacted as on SQLite.

Replicas of one agent write the same tasks, so a save must be a compare-and-swap on the task's version
(`VersionedDatabaseTaskStore`, a2a-sdk 1.2's cluster mode), and each save appends its event to the shared
`task_events` table that another replica's subscriber polls (`DatabaseTaskEventStream`); a cancel written by
one replica reaches the replica running the turn as a version it did not write. The write-behind store of
SQLite (task_store.py) cannot do that, so here every save is a transaction on the server: what shared state
costs per turn is measured in bench/state.py.

What is kept passes the guard's redaction, as in task_store.py: the task, and a task carried by an event (its
history holds the caller's own messages); the other events are what the agent sent, which the guard has seen.

With the database out of reach (outage.py), a save waits for it, up to `state.outage_wait`; past that it fails
with the sentence, and a2a-sdk fails the task's stream (frontend/handler/message_handler.py ends it with a
final `failed` status). The task is then owed: its later saves (a2a-sdk's own `failed`) are kept here, and once
the database is back it is written `failed` with that sentence, unless something else ended it meanwhile.
"""

import asyncio
import logging
from dataclasses import dataclass

from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    DatabaseTaskEventStream,
    StoredTask,
    TaskVersion,
    VersionedDatabaseTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.types import (
    ListTasksRequest,
    ListTasksResponse,
    Task,
    TaskStatusUpdateEvent,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.outage import StateOutage, StateUnavailable, unreachable
from a2a_wrapper.state.recovery import fail_with
from a2a_wrapper.state.task_store import kept

log = logging.getLogger(__name__)


@dataclass
class _Owed:
    task: Task  # its latest state, kept (redacted)
    context: ServerCallContext
    sentence: str


POLL_INTERVAL = 0.25  # seconds between a remote subscriber's reads of `task_events`


class SharedTaskStore(VersionedDatabaseTaskStore):
    def __init__(self, engine: AsyncEngine, outage: StateOutage) -> None:
        super().__init__(engine, create_table=False)  # migrations.py creates the tables, once for all replicas
        self._outage = outage
        self._owed: dict[str, _Owed] = {}  # task id -> a task whose turn failed for an outage, not yet written
        self._mending = asyncio.Lock()

    async def save(
        self,
        task: Task,
        *,
        event: Event | None = None,
        prev: Task | None = None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        kept_event = kept(event) if isinstance(event, Task) else event
        owed = self._owed.get(task.id)
        if owed is not None:  # its turn has failed already: its last state waits for the database with it
            owed.task, owed.context = kept(task), context
            return prev_version
        save = super().save
        try:
            return await self._outage.held(
                lambda: save(kept(task), event=kept_event, prev=prev, prev_version=prev_version, context=context)
            )
        except StateUnavailable as exc:
            self._owed[task.id] = _Owed(kept(task), context, exc.message)
            raise

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        if self._owed:  # the database may be back before the outage's watch has seen it: no read shows them working
            await self.mend()
        get = super().get
        return await self._outage.refused(lambda: get(task_id, context))

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        listed = super().list
        return await self._outage.refused(lambda: listed(params, context))

    async def mend(self) -> None:
        """The database is back: each owed task is written `failed` with its sentence (unless it ended meanwhile),
        as a versioned write whose event reaches its subscribers on every replica."""
        mended = 0
        async with self._mending:
            for task_id, owed in list(self._owed.items()):
                try:
                    mended += await self._fail(owed)
                except Exception as exc:
                    if unreachable(exc):
                        return  # out still, or again: the next return mends the rest
                    raise
                del self._owed[task_id]
        if mended:
            log.warning("%d task(s) whose turn failed while the state database was out were saved failed", mended)

    async def _fail(self, owed: _Owed) -> int:
        found = await super().get(owed.task.id, owed.context)
        if found is not None and found.task.status.state in TERMINAL_TASK_STATES:
            return 0
        task = Task()
        task.CopyFrom(owed.task)
        fail_with(task, owed.sentence)
        event = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)
        version = found.version if found is not None else TaskVersion.MISSING
        try:
            await super().save(task, event=event, prev=None, prev_version=version, context=owed.context)
        except ConcurrentTaskModificationError:
            return 0  # advanced meanwhile by another writer: its state stands
        return 1


def shared_events(engine: AsyncEngine) -> DatabaseTaskEventStream:
    """The events of tasks another replica runs, read from the table the store appends them to."""
    return DatabaseTaskEventStream(engine, create_table=False, poll_interval_s=POLL_INTERVAL)
