"""Tasks on shared state (PostgreSQL): a2a-sdk's cluster mode, what it keeps redacted as on SQLite.

Replicas of one agent write the same tasks, so a save must be a compare-and-swap on the task's version
(`VersionedDatabaseTaskStore`, a2a-sdk 1.2's cluster mode), and each save appends its event to the shared
`task_events` table that another replica's subscriber polls (`DatabaseTaskEventStream`); a cancel written by
one replica reaches the replica running the turn as a version it did not write. The write-behind store of
SQLite (task_store.py) cannot do that, so here every save is a transaction on the server: what shared state
costs per turn is measured in bench/state.py.

What is kept passes the guard's redaction, as in task_store.py: the task, and a task carried by an event (its
history holds the caller's own messages); the other events are what the agent sent, which the guard has seen.
"""

from a2a.server.cluster import DatabaseTaskEventStream, TaskVersion, VersionedDatabaseTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.types import Task
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.task_store import kept

POLL_INTERVAL = 0.25  # seconds between a remote subscriber's reads of `task_events`


class SharedTaskStore(VersionedDatabaseTaskStore):
    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine, create_table=False)  # migrations.py creates the tables, once for all replicas

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
        return await super().save(kept(task), event=kept_event, prev=prev, prev_version=prev_version, context=context)


def shared_events(engine: AsyncEngine) -> DatabaseTaskEventStream:
    """The events of tasks another replica runs, read from the table the store appends them to."""
    return DatabaseTaskEventStream(engine, create_table=False, poll_interval_s=POLL_INTERVAL)
