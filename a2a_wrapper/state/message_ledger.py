"""Messages already accepted: (caller, contextId, messageId) -> the task each created, in the agent's state.

A client that retries after a dropped connection sends the same messageId again; the ledger names the task the
first attempt made, so the turn is not run twice, across a restart too. A message sent without a contextId is
keyed with "" (its retry has none either). An entry is honoured for RETENTION seconds; older ones are ignored
and deleted (at start, then at most once an hour), and one whose task is gone is forgotten by the caller.

A claim is on the path of every message: one statement, run on the loop on SQLite (database.py, `open_on_loop`);
on PostgreSQL the same statement on the engine (a retry on another replica finds the entry too).
"""

import sqlite3
import time
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.database import my_turn, open_on_loop, writing
from a2a_wrapper.state.engines import is_shared
from a2a_wrapper.state.migrations import migrate

RETENTION = 24 * 3600.0  # seconds: a retry comes within moments; a day covers a client's longest backoff
_PRUNE_EVERY = 3600.0

# One statement per new message: the key is taken unless a fresh entry holds it; only then is a row returned.
_CLAIM = (
    "INSERT INTO message_ledger VALUES (:a, :c, :m, :t, :now)"
    " ON CONFLICT (caller, context_id, message_id) DO UPDATE SET task_id = excluded.task_id,"
    " accepted = excluded.accepted WHERE message_ledger.accepted < :now - :keep RETURNING task_id"
)
_CLAIMED = "SELECT task_id FROM message_ledger WHERE caller = :a AND context_id = :c AND message_id = :m"


@dataclass(frozen=True, slots=True)
class MessageKey:
    caller: str  # the authenticated A2A caller, "" when auth is off
    context_id: str  # as the message named it, "" when it named none
    message_id: str


class MessageLedger:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._pruned = 0.0
        self._db: sqlite3.Connection | None = None

    async def initialize(self) -> None:
        """The schema brought up to date (migrations.py), old entries pruned; on SQLite, its loop connection."""
        await migrate(self._engine)
        await self._prune()
        if not is_shared(self._engine):
            self._db = open_on_loop(self._engine)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    async def claim(self, key: MessageKey, task_id: str) -> str | None:
        """Records `task_id` for the key and returns None, or returns the task an earlier attempt recorded."""
        now = time.time()
        if now - self._pruned > _PRUNE_EVERY:
            await self._prune()
        values = {"a": key.caller, "c": key.context_id, "m": key.message_id, "t": task_id, "now": now}
        if self._db is None:  # PostgreSQL: the same statements, on the engine
            return await self._claim_on_server(values)
        async with my_turn(self._engine):
            if self._db.execute(_CLAIM, {**values, "keep": RETENTION}).fetchall():  # all: the statement ends
                return None
            row = self._db.execute(_CLAIMED, values).fetchone()  # a retry: the row the first attempt made
        return str(row[0]) if row is not None else None

    async def _claim_on_server(self, values: dict[str, object]) -> str | None:
        async with self._engine.begin() as db:
            if (await db.execute(text(_CLAIM), {**values, "keep": RETENTION})).all():
                return None
            row = (await db.execute(text(_CLAIMED), values)).first()
        return str(row[0]) if row is not None else None

    async def forget(self, key: MessageKey, task_id: str) -> None:
        """Drops the key's entry if it still names `task_id` (its attempt made no task, or the task is gone)."""
        async with writing(self._engine) as db:
            await db.execute(
                text(
                    "DELETE FROM message_ledger WHERE caller = :a AND context_id = :c AND message_id = :m"
                    " AND task_id = :t"
                ),
                {"a": key.caller, "c": key.context_id, "m": key.message_id, "t": task_id},
            )

    async def _prune(self) -> None:
        self._pruned = time.time()
        async with writing(self._engine) as db:
            await db.execute(
                text("DELETE FROM message_ledger WHERE accepted < :cutoff"), {"cutoff": self._pruned - RETENTION}
            )
