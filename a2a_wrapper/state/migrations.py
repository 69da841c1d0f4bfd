"""The state's schema, created or brought up to date at start: ordered steps, each applied once.

`schema_version` holds the steps applied. Every start runs the steps past the newest one recorded, each in a
transaction with its row, so a start that dies halfway resumes where it stopped; on PostgreSQL an advisory lock
makes two replicas starting together take turns (the second finds nothing left to do). a2a-sdk's own tables are
created here too, by its own models, before anyone writes to them (its stores would create them lazily, racing
each other across replicas).

Files of versions before `schema_version` (SQLite only: there was no other engine) are upgraded before the steps,
on every start of a SQLite file (a few PRAGMAs; a file copied back from a backup is old again): audit's
`answered_by`, context tables keyed by context id alone, rules without ids. Step 1 then creates what they lack.
"""

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast
from weakref import WeakSet

from a2a.server.models import Base, PushNotificationConfigModel, TaskEventModel, TaskModel, TaskVersionModel
from sqlalchemy import Table, func, insert, inspect, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from a2a_wrapper.state import schema
from a2a_wrapper.state.database import my_turn
from a2a_wrapper.state.sdk_tables import first_owner_of_context

log = logging.getLogger(__name__)

_LOCK = 0x0A2A_0001  # the advisory lock's key: any constant the replicas agree on
_migrated: WeakSet[AsyncEngine] = WeakSet()  # engines brought up to date by this process
_SDK_TABLES: list[Table] = [
    cast(Table, model.__table__) for model in (TaskModel, PushNotificationConfigModel, TaskVersionModel, TaskEventModel)
]


@dataclass(frozen=True, slots=True)
class Step:
    version: int
    description: str
    apply: Callable[[AsyncConnection], Awaitable[None]]


async def migrate(engine: AsyncEngine) -> int:
    """Applies the steps the database lacks; returns how many. Idempotent: a second call applies none, and on an
    engine this process has migrated already (each of the agent's state parts asks) it does not look again."""
    async with my_turn(engine):
        if engine in _migrated:
            return 0
        applied = await _migrate(engine)
        _migrated.add(engine)
        return applied


async def _migrate(engine: AsyncEngine) -> int:
    shared = engine.dialect.name != "sqlite"
    async with engine.connect() as db:
        if shared:
            async with db.begin():
                await db.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _LOCK})
        try:
            return await _apply_missing(db)
        finally:
            if shared:
                async with db.begin():
                    await db.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _LOCK})


async def _apply_missing(db: AsyncConnection) -> int:
    if db.dialect.name == "sqlite":
        async with db.begin():
            await _upgrade_older_file(db)
    async with db.begin():
        await db.run_sync(schema.schema_version.create, checkfirst=True)
        current = (await db.execute(select(func.max(schema.schema_version.c.version)))).scalar() or 0
    missing = [step for step in STEPS if step.version > current]
    for step in missing:
        async with db.begin():
            await step.apply(db)
            await db.execute(
                insert(schema.schema_version).values(
                    version=step.version, description=step.description, applied_at=time.time()
                )
            )
        log.info("state schema: applied step %d (%s)", step.version, step.description)
    return len(missing)


async def _tables(db: AsyncConnection) -> None:
    await db.run_sync(Base.metadata.create_all, tables=_SDK_TABLES)
    await db.run_sync(schema.metadata.create_all)


async def _upgrade_older_file(db: AsyncConnection) -> None:
    if "answered_by" in await _columns(db, "audit"):
        await db.execute(text("ALTER TABLE audit RENAME COLUMN answered_by TO decided_by"))
    await db.run_sync(Base.metadata.create_all, tables=[cast(Table, TaskModel.__table__)])  # read by `_give_callers`
    for table in (schema.context_sessions, schema.context_rules):
        await _give_callers(db, table)
    await _number_rules(db)


async def _give_callers(db: AsyncConnection, table: Table) -> None:
    """Gives a table of an older version, keyed by context id alone, its `caller` column.

    Each row goes to the caller who started the context's first task (its owner in a2a-sdk's `tasks` table),
    so nobody loses a session or a rule; a context with no task left goes to the anonymous caller. A second
    caller who had joined the context under an older version is left out: it was never his.
    """
    columns = await _columns(db, table.name)
    if not columns or "caller" in columns:
        return
    older = f"{table.name}_before_callers"
    listed = ", ".join(columns)
    await db.execute(text(f"ALTER TABLE {table.name} RENAME TO {older}"))
    await db.run_sync(table.create)
    first_owner = first_owner_of_context(f"{older}.context_id")
    await db.execute(
        text(f"INSERT INTO {table.name} (caller, {listed}) SELECT {first_owner}, {listed} FROM {older} ORDER BY rowid")
    )
    await db.execute(text(f"DROP TABLE {older}"))
    log.info("%s: gave each of the older version's contexts to the caller who started it", table.name)


async def _number_rules(db: AsyncConnection) -> None:
    """Context rules of an older file, ordered by SQLite's rowid alone, get it as their `id` (PostgreSQL has none)."""
    columns = await _columns(db, "context_rules")
    if not columns or "id" in columns:
        return
    await db.execute(text("ALTER TABLE context_rules RENAME TO context_rules_before_ids"))
    await db.run_sync(schema.context_rules.create)
    await db.execute(
        text(
            "INSERT INTO context_rules (id, caller, context_id, rule)"
            " SELECT rowid, caller, context_id, rule FROM context_rules_before_ids"
        )
    )
    await db.execute(text("DROP TABLE context_rules_before_ids"))


async def _columns(db: AsyncConnection, table: str) -> list[str]:
    """The table's column names in order; none when it does not exist."""

    def read(connection: object) -> list[str]:
        inspector = inspect(connection)
        if not inspector.has_table(table):
            return []
        return [column["name"] for column in inspector.get_columns(table)]

    return await db.run_sync(read)


STEPS = [
    Step(1, "the tables, created or brought up from a version before schema_version", _tables),
]
