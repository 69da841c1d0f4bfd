"""Messages already accepted: (caller, contextId, messageId) -> the task each created, in the agent's state.

A client that retries after a dropped connection sends the same messageId again; the ledger names the task the
first attempt made, so the turn is not run twice, across a restart too. A message sent without a contextId is
keyed with "" (its retry has none either). An entry is honoured for RETENTION seconds; older ones are ignored
and deleted (at start, then at most once an hour), and one whose task is gone is forgotten by the caller.

A claim is on the path of every message. On SQLite it is decided on the loop: a claim this run made is in memory
until it is written, one from an earlier run is read by its key (database.py, `open_on_loop`), and a new one
rides with the task writer's next transaction, a moment later (write_behind.py), instead of a commit of its own
before the turn starts. A crash in that moment loses the claim with the task it names (that task's row is not
written yet either), so the retry runs again, as it would have found its task gone before. One process serves a state
folder (lock.py), so the keys the table holds are known in memory too (read at start and after each prune, added
as written): a new key, nearly every message, is decided without a query. On PostgreSQL one statement on the
engine claims the key (a retry on another replica finds the entry too); with the server out of reach the claim
fails at once with the outage's sentence (outage.py), and the message runs nowhere.
"""

import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.state.database import open_on_loop, writing
from a2a_wrapper.state.engines import is_shared
from a2a_wrapper.state.migrations import migrate
from a2a_wrapper.state.outage import StateOutage
from a2a_wrapper.state.write_behind import Row, Writer

Result = TypeVar("Result")

RETENTION = 24 * 3600.0  # seconds: a retry comes within moments; a day covers a client's longest backoff
_PRUNE_EVERY = 3600.0

# One statement per new message: the key is taken unless a fresh entry holds it; only then is a row returned.
_CLAIM = (
    "INSERT INTO message_ledger VALUES (:a, :c, :m, :t, :now)"
    " ON CONFLICT (caller, context_id, message_id) DO UPDATE SET task_id = excluded.task_id,"
    " accepted = excluded.accepted WHERE message_ledger.accepted < :now - :keep RETURNING task_id"
)
_CLAIMED = "SELECT task_id FROM message_ledger WHERE caller = :a AND context_id = :c AND message_id = :m"
_FRESH = _CLAIMED + " AND accepted >= :cutoff"
_WRITE = (  # a claim taken on SQLite, as the task writer writes it
    "INSERT INTO message_ledger VALUES (?, ?, ?, ?, ?) ON CONFLICT (caller, context_id, message_id)"
    " DO UPDATE SET task_id = excluded.task_id, accepted = excluded.accepted"
)


@dataclass(frozen=True, slots=True)
class MessageKey:
    caller: str  # the authenticated A2A caller, "" when auth is off
    context_id: str  # as the message named it, "" when it named none
    message_id: str


class MessageLedger:
    """`writer` (SQLite: the task writer; none on PostgreSQL) writes the claims behind the turn."""

    sql = _WRITE  # the statement of its claims, for the writer they ride with

    def __init__(self, engine: AsyncEngine, writer: Writer | None = None, outage: StateOutage | None = None) -> None:
        """`outage`: the shared database's (PostgreSQL), which refuses a claim at once while it is out of reach."""
        self._engine = engine
        self._writer = writer
        self._outage = outage
        self._pruned = 0.0
        self._db: sqlite3.Connection | None = None
        self._unwritten: dict[MessageKey, tuple[str, float]] = {}  # SQLite: claims not yet written, by key
        self._stored: set[MessageKey] = set()  # SQLite: every key the table holds (fresh or not yet pruned)

    async def initialize(self) -> None:
        """The schema brought up to date (migrations.py), old entries pruned; on SQLite, its loop connection and
        its rides with the task writer."""
        await migrate(self._engine)
        await self._prune()
        if not is_shared(self._engine):
            if self._writer is None:
                raise ValueError("a ledger on SQLite needs the task writer its claims ride with")
            self._db = open_on_loop(self._engine)
            self._stored = self._stored_keys()
            self._writer.carry(self)

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
        if self._db is None or self._writer is None:  # PostgreSQL: one statement, on the engine
            return await self._on_server(lambda: self._claim_on_server(values))
        held = self._unwritten.get(key)
        if held is not None:  # a retry of a claim this run made, not written yet
            return held[0]
        if key in self._stored:
            row = self._db.execute(_FRESH, {**values, "cutoff": now - RETENTION}).fetchone()
            if row is not None:  # a retry: the row the first attempt made
                return str(row[0])
        self._unwritten[key] = (task_id, now)
        self._writer.wake()
        return None

    async def _on_server(self, action: Callable[[], Awaitable[Result]]) -> Result:
        """`action()`, refused at once with the outage's sentence while the shared database is out of reach."""
        return await (self._outage.refused(action) if self._outage is not None else action())

    async def _claim_on_server(self, values: dict[str, object]) -> str | None:
        async with self._engine.begin() as db:
            if (await db.execute(text(_CLAIM), {**values, "keep": RETENTION})).all():
                return None
            row = (await db.execute(text(_CLAIMED), values)).first()
        return str(row[0]) if row is not None else None

    async def forget(self, key: MessageKey, task_id: str) -> None:
        """Drops the key's entry if it still names `task_id` (its attempt made no task, or the task is gone)."""
        self._drop_unwritten(key, task_id)
        await self._on_server(partial(self._delete, key, task_id))

    async def _delete(self, key: MessageKey, task_id: str) -> None:
        async with writing(self._engine) as db:  # in the writer's queue: before or after a write that holds it
            await db.execute(
                text(
                    "DELETE FROM message_ledger WHERE caller = :a AND context_id = :c AND message_id = :m"
                    " AND task_id = :t"
                ),
                {"a": key.caller, "c": key.context_id, "m": key.message_id, "t": task_id},
            )

    def holds_unwritten(self) -> bool:
        return bool(self._unwritten)

    def unwritten(self) -> list[Row]:
        return [(k.caller, k.context_id, k.message_id, task, at) for k, (task, at) in self._unwritten.items()]

    def written(self, rows: list[Row]) -> None:
        for caller, context_id, message_id, task_id, _ in rows:
            key = MessageKey(caller, context_id, message_id)
            self._stored.add(key)
            self._drop_unwritten(key, task_id)

    def _drop_unwritten(self, key: MessageKey, task_id: str) -> None:
        """The key's claim leaves memory if it still names `task_id` (a later claim of the key stays)."""
        if self._unwritten.get(key, ("",))[0] == task_id:
            del self._unwritten[key]

    async def _prune(self) -> None:
        self._pruned = time.time()
        async with writing(self._engine) as db:
            await db.execute(
                text("DELETE FROM message_ledger WHERE accepted < :cutoff"), {"cutoff": self._pruned - RETENTION}
            )
        if self._db is not None:
            self._stored = self._stored_keys()

    def _stored_keys(self) -> set[MessageKey]:
        assert self._db is not None
        rows = self._db.execute("SELECT caller, context_id, message_id FROM message_ledger")
        return {MessageKey(*row) for row in rows}
