"""Tasks written to a2a-sdk's `tasks` table as one statement for any number of them.

`DatabaseTaskStore.save` (a2a-sdk 1.3.0) is an ORM `merge`: a SELECT of the row, then an INSERT or UPDATE, in a
transaction of its own, per task. The writer behind the turn (task_store.py) writes every task it holds at
once instead: one `INSERT … ON CONFLICT (id) DO UPDATE` in one transaction. The row is the one the SDK's own
save would write — its `_to_orm` builds it (a private method, checked against 1.3.0 like the queries in
sdk_tables.py), so the columns, their JSON and `DatabaseTaskStore.get` reading them back stay the SDK's.
"""

from collections.abc import Sequence
from functools import cache
from typing import Any

from a2a.server.tasks import DatabaseTaskStore
from a2a.types import Task
from sqlalchemy import Connection
from sqlalchemy.dialects.sqlite import insert


def upsert_tasks(db: Connection, store: DatabaseTaskStore, tasks: Sequence[tuple[Task, str]]) -> None:
    """Writes each (task, owner) as the SDK's save would, in one statement on the open transaction `db` (the
    task writer's, on the loop: database.py `engine_on_loop`)."""
    rows = [_row(store, task, owner) for task, owner in tasks]
    db.execute(_upsert(store.task_model), rows)


@cache
def _upsert(model: type[Any]) -> Any:
    """The statement, built once per table (SQLAlchemy then finds its compiled form in its cache)."""
    statement = insert(model)
    updated = {name: column for name, column in statement.excluded.items() if not column.primary_key}
    return statement.on_conflict_do_update(index_elements=["id"], set_=updated)


def _row(store: DatabaseTaskStore, task: Task, owner: str) -> dict[str, Any]:
    model = store._to_orm(task, owner)  # the SDK's row: see the module's docstring
    return {column.name: getattr(model, attribute.key) for attribute, column in _columns(store)}


def _columns(store: DatabaseTaskStore) -> list[tuple[Any, Any]]:
    """The mapped attributes with their table columns (`task_metadata` is the column `metadata`)."""
    return _mapped(store.task_model)


@cache
def _mapped(model: type[Any]) -> list[tuple[Any, Any]]:
    return [(attribute, attribute.columns[0]) for attribute in model.__mapper__.column_attrs]
