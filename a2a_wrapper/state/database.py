"""The agent's SQLite file: its engine (WAL), and its writes one at a time in this process (on PostgreSQL, see
engines.py, writes go straight to the server).

SQLite lets one writer in at a time; the others wait in its busy handler, which is no queue: with sixty turns at
once, each writing its session, its task and its egress decisions, an unlucky writer waits past any timeout and
fails with "database is locked". Writes here queue on one asyncio lock per engine instead, in order and without a
timeout; SQLite's own busy timeout is left for other processes reading the file (`a2a-wrap audit`).

The writes on the path of every turn (the ledger's claim, the task writer's upsert) run on the loop instead, on
connections of their own taken in the same queue: ~0.1-0.2 ms of SQLite, where the async driver's hand-offs to
its thread and back took ~1.2 ms each. Waiting its turn, such a write finds no other writer of this process in the
file. Those connections never checkpoint, so a commit there is never a checkpoint's fsync on the loop;
`checkpoint` moves the WAL into the file on the engine's thread instead (the task writer calls it every
CHECKPOINT_EVERY writes).
"""

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any, Literal, TypeVar
from weakref import WeakKeyDictionary

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from a2a_wrapper import fast_json

Result = TypeVar("Result")
_writers: WeakKeyDictionary[AsyncEngine, asyncio.Lock] = WeakKeyDictionary()


def open_database(path: Path) -> AsyncEngine:
    """The SQLite file at `path`, in WAL mode: commits survive a crash of the process without an fsync each."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}", json_serializer=fast_json.dumps)

    @event.listens_for(engine.sync_engine, "connect")
    def _pragmas(connection: Any, _record: Any) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=5000")
        cursor.close()

    return engine


def open_on_loop(engine: AsyncEngine, isolation_level: Literal["DEFERRED"] | None = None) -> sqlite3.Connection:
    """The engine's file on a plain connection that never checkpoints: write on it in `my_turn`. Each statement is
    its own transaction unless `isolation_level` names one ("DEFERRED": from the first write to `commit`)."""
    database = engine.url.database
    assert database, "the engine has no database file"
    connection = sqlite3.connect(database, isolation_level=isolation_level)
    connection.execute("PRAGMA synchronous=NORMAL")  # as the engine's: no fsync per commit in WAL
    connection.execute("PRAGMA busy_timeout=5000")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    return connection


async def checkpoint(engine: AsyncEngine) -> None:
    """The WAL's pages moved into the file, on the engine's thread; PASSIVE: it waits for no reader or writer."""
    async with engine.connect() as db:
        await db.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")


@asynccontextmanager
async def my_turn(engine: AsyncEngine) -> AsyncIterator[None]:
    """This process's turn to write, after the writes it started before; no transaction is opened."""
    async with _writers.setdefault(engine, asyncio.Lock()):
        yield


@asynccontextmanager
async def writing(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A write transaction, after the ones this process started before it (on SQLite; a server has its own)."""
    async with _queue(engine), engine.begin() as db:
        yield db


async def written(engine: AsyncEngine, write: Callable[[], Awaitable[Result]]) -> Result:
    """`await write()`, another library's write on this engine (a2a-sdk's task store), in the same queue."""
    async with _queue(engine):
        return await write()


def _queue(engine: AsyncEngine) -> AbstractAsyncContextManager[object]:
    """SQLite's one writer queues here; a database server (PostgreSQL) takes concurrent writers itself."""
    if engine.dialect.name != "sqlite":
        return nullcontext()
    return _writers.setdefault(engine, asyncio.Lock())
