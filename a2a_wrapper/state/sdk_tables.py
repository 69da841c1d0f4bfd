"""Every query this project makes against a2a-sdk's own tables, in one place.

The SDK's database stores (a2a-sdk 1.3.0, `a2a.server.tasks.DatabaseTaskStore` and
`DatabasePushNotificationConfigStore`) own the `tasks` and `push_notification_configs` tables; their columns are
not a public API. What is read here — cluster mode's `task_events` (`task_id`, `task_version`,
`event_data`), `id`, `context_id`, `owner` (the caller that created the task), `status`
(JSON with a `state`), SQLite's `rowid` order and a config's `task_id` — was checked against 1.3.0; a new SDK
version must be checked against these queries before the pin moves. Queries the SDK makes itself, through its
stores' own methods (ListTasks in state/task_listing.py, the configs in push/store.py), are its own.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

TASKS = "tasks"
PUSH_CONFIGS = "push_notification_configs"
TASK_EVENTS = "task_events"  # cluster mode's log: one row per event saved, with the task's version after it
_STORED = f"SELECT id, owner, status, context_id FROM {TASKS}"


@dataclass(frozen=True, slots=True)
class StoredTask:
    id: str
    owner: str  # "" without auth
    state: str | None  # the status's state name, e.g. "TASK_STATE_WORKING"
    context_id: str


async def task_ids(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as db:
        return {str(row[0]) for row in await db.execute(text(f"SELECT id FROM {TASKS}"))}


async def stored_tasks(engine: AsyncEngine) -> Sequence[StoredTask]:
    return await _stored(engine, _STORED)


async def tasks_of_context(engine: AsyncEngine, owner: str, context_id: str) -> Sequence[StoredTask]:
    """The tasks `owner` made in one context."""
    return await _stored(
        engine, f"{_STORED} WHERE owner = :owner AND context_id = :c", {"owner": owner, "c": context_id}
    )


async def tasks_with_push_configs(engine: AsyncEngine) -> Sequence[StoredTask]:
    """The tasks that have a webhook registered, whoever registered it."""
    return await _stored(engine, f"{_STORED} WHERE id IN (SELECT task_id FROM {PUSH_CONFIGS})")


async def event_data_at(engine: AsyncEngine, task_id: str, version: int) -> bytes | None:
    """The event that made `version` of the task, as the log keeps it (a serialized StreamResponse), or None."""
    query = f"SELECT event_data FROM {TASK_EVENTS} WHERE task_id = :task AND task_version = :version LIMIT 1"
    async with engine.connect() as db:
        row = (await db.execute(text(query), {"task": task_id, "version": version})).first()
    return bytes(row[0]) if row is not None else None


def first_owner_of_context(context_column: str) -> str:
    """An SQL expression: the owner of the first task of the context in `context_column`, or '' (none left)."""
    return (
        f"COALESCE((SELECT owner FROM {TASKS} WHERE {TASKS}.context_id = {context_column} ORDER BY rowid LIMIT 1), '')"
    )


async def _stored(engine: AsyncEngine, query: str, values: dict[str, str] | None = None) -> Sequence[StoredTask]:
    async with engine.connect() as db:
        rows = (await db.execute(text(query), values or {})).all()
    return [
        StoredTask(str(task_id), owner or "", _state(status), str(context)) for task_id, owner, status, context in rows
    ]


def _state(status: object) -> str | None:
    value = json.loads(status) if isinstance(status, str) else status or {}
    return value.get("state") if isinstance(value, dict) else None
