"""Every query this project makes against a2a-sdk's own tables, in one place.

The SDK's database task store (a2a-sdk 1.3.0, `a2a.server.tasks.DatabaseTaskStore`) owns the `tasks` table; its
columns are not a public API. What is read here — `id`, `context_id`, `owner` (the caller that created the
task), `status` (JSON with a `state`) and SQLite's `rowid` order — was checked against 1.3.0; a new SDK version
must be checked against these queries before the pin moves.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

TASKS = "tasks"


@dataclass(frozen=True, slots=True)
class StoredTask:
    id: str
    owner: str  # "" without auth
    state: str | None  # the status's state name, e.g. "TASK_STATE_WORKING"


async def task_ids(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as db:
        return {str(row[0]) for row in await db.execute(text(f"SELECT id FROM {TASKS}"))}


async def stored_tasks(engine: AsyncEngine) -> Sequence[StoredTask]:
    async with engine.connect() as db:
        rows = (await db.execute(text(f"SELECT id, owner, status FROM {TASKS}"))).all()
    return [StoredTask(str(task_id), owner or "", _state(status)) for task_id, owner, status in rows]


def first_owner_of_context(context_column: str) -> str:
    """An SQL expression: the owner of the first task of the context in `context_column`, or '' (none left)."""
    return (
        f"COALESCE((SELECT owner FROM {TASKS} WHERE {TASKS}.context_id = {context_column}"
        " ORDER BY rowid LIMIT 1), '')"
    )


def _state(status: object) -> str | None:
    value = json.loads(status) if isinstance(status, str) else status or {}
    return value.get("state") if isinstance(value, dict) else None
