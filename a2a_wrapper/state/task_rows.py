"""Tasks written to a2a-sdk's `tasks` table as one statement for any number of them.

`DatabaseTaskStore.save` (a2a-sdk 1.3.0) is an ORM `merge`: a SELECT of the row, then an INSERT or UPDATE, in a
transaction of its own, per task. The writer behind the turn (task_store.py) writes every task it holds at
once instead: one `INSERT … ON CONFLICT (id) DO UPDATE` in one transaction. The row is the one the SDK's own
save would write — its `_to_orm` builds it (a private method, checked against 1.3.0 like the queries in
sdk_tables.py), so the columns, their JSON and `DatabaseTaskStore.get` reading them back stay the SDK's.
"""

from collections.abc import Sequence
from typing import Any

from a2a.server.tasks import DatabaseTaskStore
from a2a.types import Task
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.ext.asyncio import AsyncConnection


async def upsert_tasks(db: AsyncConnection, store: DatabaseTaskStore, tasks: Sequence[tuple[Task, str]]) -> None:
    """Writes each (task, owner) as the SDK's save would, in one statement on the open transaction `db`."""
    rows = [_row(store, task, owner) for task, owner in tasks]
    statement = insert(store.task_model)
    updated = {name: column for name, column in statement.excluded.items() if not column.primary_key}
    await db.execute(statement.on_conflict_do_update(index_elements=["id"], set_=updated), rows)


def _row(store: DatabaseTaskStore, task: Task, owner: str) -> dict[str, Any]:
    model = store._to_orm(task, owner)  # the SDK's row: see the module's docstring
    return {column.name: getattr(model, attribute.key) for attribute, column in _columns(store)}


def _columns(store: DatabaseTaskStore) -> list[tuple[Any, Any]]:
    """The mapped attributes with their table columns (`task_metadata` is the column `metadata`)."""
    mapper = store.task_model.__mapper__
    return [(attribute, attribute.columns[0]) for attribute in mapper.column_attrs]
