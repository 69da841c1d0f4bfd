"""Tasks written to a2a-sdk's `tasks` table in one transaction for any number of them, on a plain SQLite connection.

`DatabaseTaskStore.save` (a2a-sdk 1.3.0) is an ORM `merge`: a SELECT of the row, then an INSERT or UPDATE, in a
transaction of its own, per task. The writer behind the turn (task_store.py) writes every task it holds at once
instead: one `INSERT … ON CONFLICT (id) DO UPDATE`, run for each of them in one transaction. The row is the one
the SDK's own save writes: the values its `_to_orm` puts in the model (`sdk_row`, held to it by a test), each
bound as SQLAlchemy binds it (the column type's own bind processor: JSON through the engine's serializer, the
timestamp as SQLite's text) into the statement SQLAlchemy compiles, once per table. Only the execution is not
SQLAlchemy's: the statement goes to sqlite3 itself, on the writer's own connection (database.py `open_on_loop`).
A trivial turn's whole write, its redaction included, took 1.2 ms of CPU with SQLAlchemy's model and engine on
that connection and takes 0.8 ms this way (timed in the agent's process over bench/overhead.py's turns).
"""

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from a2a.server.tasks import DatabaseTaskStore
from a2a.types import Task
from google.protobuf.json_format import MessageToDict
from sqlalchemy import Dialect
from sqlalchemy.dialects.sqlite import insert

Bind = Callable[[Any], Any] | None  # a column type's bind processor (None: the value as it is)


@dataclass(frozen=True)
class TaskUpsert:
    sql: str  # the compiled statement, its parameters positional
    columns: tuple[tuple[str, Bind], ...]  # per parameter: the model attribute it takes, and its bind processor

    def run(
        self,
        connection: sqlite3.Connection,
        tasks: Sequence[tuple[Task, str]],
        riding: Sequence[tuple[str, Sequence[tuple[Any, ...]]]] = (),
    ) -> None:
        """Writes each (task, owner) as the SDK's save would: the one statement, run for each, in one transaction,
        with the (statement, rows) of `riding` (write_behind.py)."""
        rows = [self._bound(sdk_row(task, owner)) for task, owner in tasks]
        with connection:  # commits, or rolls back on an error
            if rows:
                connection.executemany(self.sql, rows)
            for sql, more in riding:
                connection.executemany(sql, more)

    def _bound(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[key] if bind is None else bind(row[key]) for key, bind in self.columns)


def task_upsert(store: DatabaseTaskStore, dialect: Dialect) -> TaskUpsert:
    """The upsert of `store`'s table, as `dialect` (the engine's) compiles and binds it."""
    return _compiled(store.task_model, dialect)


@cache
def _compiled(model: type[Any], dialect: Dialect) -> TaskUpsert:
    statement = insert(model)
    updated = {name: column for name, column in statement.excluded.items() if not column.primary_key}
    compiled = statement.on_conflict_do_update(index_elements=["id"], set_=updated).compile(dialect=dialect)
    assert compiled.positiontup is not None, "SQLite's parameters are positional"
    by_column = {
        attribute.columns[0].name: (attribute.key, attribute.columns[0].type.dialect_impl(dialect))
        for attribute in model.__mapper__.column_attrs
    }
    columns = []
    for name in compiled.positiontup:
        key, column_type = by_column[compiled.binds[name].key]
        columns.append((key, column_type.bind_processor(dialect)))
    return TaskUpsert(compiled.string, tuple(columns))


def sdk_row(task: Task, owner: str) -> dict[str, Any]:
    """The values `DatabaseTaskStore._to_orm` (a2a-sdk 1.3.0) gives the model, by attribute, without building it."""
    return {
        "id": task.id,
        "context_id": task.context_id,
        "kind": "task",
        "owner": owner,
        "last_updated": task.status.timestamp.ToDatetime() if task.status.HasField("timestamp") else None,
        "status": MessageToDict(task.status),
        "artifacts": [MessageToDict(artifact) for artifact in task.artifacts],
        "history": [MessageToDict(message) for message in task.history],
        "task_metadata": MessageToDict(task.metadata) if task.metadata.fields else None,
        "protocol_version": "1.0",
    }
