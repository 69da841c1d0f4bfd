"""A task store that answers from memory and writes to the database behind the turn.

a2a-sdk saves the whole task on every event (each streamed chunk) before passing the event on; a
database commit there puts a write on the path of every chunk. Two versions of a task are written through, before
`save` returns and so before their event leaves: its first (the task's id goes to the client with that event, and
the message ledger's claim rides in the same transaction), and each one it rests in (ended, or waiting for a
person: where its stream ends). A client never holds a task id, or a state a task rests in, that a crash could
take back. Every other version only records the newest in memory and wakes a writer that persists the latest
version of each task a moment later (WRITE_DELAY), so that a turn's chunks go in one write. Reads of a task with
an unwritten version are answered from memory; listing waits for the writer first. `close` writes whatever is
left. Other stores' rows may ride in its transactions (write_behind.py: the ledger's claims). The writes run on
the loop, on a SQLite connection of the store's own (database.py: no thread hand-offs; task_rows.py: the SDK's
row, by sqlite3 itself), and every CHECKPOINT_EVERY of them the WAL is checkpointed on the engine's thread. A
process killed between a save and its write loses that intermediate version; the next start marks tasks it
finds unfinished as failed (see recovery.py).

What is kept of a task passes the guard's redaction first: the caller's own messages may hold a credential,
and the database outlives the turn. Versions are redacted when written and when read from memory (not on
every save, which would scan the whole task per chunk), so GetTask shows what the database holds. The answer's
streamed chunks are joined first (whole_answers.py): one part per answer, and a credential split across two
chunks is still one string to redact.

A write SQLite refuses (a full disk, an I/O error) is `StateUnavailable` with one sentence naming the file: a
task's first version then fails its turn at once with it (frontend/handler/outage_ends.py), and the writer tries
the rest again each second. The log says it once, until a write succeeds again.
"""

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from a2a.server.agent_execution.active_task import INTERRUPTED_TASK_STATES, TERMINAL_TASK_STATES
from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import OwnerResolver, resolve_user_scope
from a2a.server.tasks import DatabaseTaskStore, TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Part, Task
from google.protobuf.struct_pb2 import Struct, Value
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.guard import redact_item, redact_value
from a2a_wrapper.state.database import checkpoint, my_turn, open_on_loop, written
from a2a_wrapper.state.outage import StateUnavailable
from a2a_wrapper.state.task_rows import task_upsert
from a2a_wrapper.state.whole_answers import whole_answers
from a2a_wrapper.state.write_behind import Rider

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Unwritten:
    task: Task
    context: ServerCallContext
    owner: str


WRITE_DELAY = 0.1  # seconds a running task's versions wait, so that its chunks go in one write
RESTING = TERMINAL_TASK_STATES | INTERRUPTED_TASK_STATES  # a task's states where its stream ends: written at once
CHECKPOINT_EVERY = 100  # writes: ~1 MB of WAL for tasks of a few KB, moved into the file off the loop


def kept(task: Task) -> Task:
    """A copy of the task as it is kept and shown: its answers whole (whole_answers.py), every part and every
    metadata redacted, ids and states as they are. One copy: whole_answers' own when it joined anything."""
    copy = whole_answers(task)
    if copy is task:
        copy = Task()
        copy.CopyFrom(task)
    _redact_in_place(copy)
    return copy


def _redact_in_place(task: Task) -> None:
    messages = [*task.history, *([task.status.message] if task.status.HasField("message") else [])]
    holders = [*messages, *task.artifacts]
    parts = [part for holder in holders for part in holder.parts]
    for metadata in (task.metadata, *(holder.metadata for holder in holders), *(part.metadata for part in parts)):
        _redact_json(metadata)
    for part in parts:
        _redact_content(part)


def _redact_content(part: Part) -> None:
    match part.WhichOneof("content"):
        case "text":
            part.text = redact_value(part.text)
        case "url":
            part.url = redact_value(part.url)
        case "data":
            _redact_json(part.data)
        case "raw":  # a file: redacted when it is text; bytes of another kind cannot be
            try:
                part.raw = redact_value(part.raw.decode()).encode()
            except UnicodeDecodeError:
                pass


def _redact_json(message: Struct | Value) -> None:
    """Redacted in place as `redact_value` redacts its JSON, walked on the message itself (no conversion to a dict
    and back); only a string that changes is written, so an absent field stays absent."""
    if isinstance(message, Struct):
        fields = message.fields
        for key in fields:
            _redact_entry(key, fields[key])
    else:
        _redact_entry(None, message)


def _redact_entry(key: str | None, value: Value) -> None:
    match value.WhichOneof("kind"):
        case "string_value":
            kept = redact_item(key, value.string_value)
            if kept != value.string_value:
                value.string_value = kept
        case "struct_value":
            _redact_json(value.struct_value)
        case "list_value":
            for item in value.list_value.values:
                _redact_entry(None, item)


class WriteBehindTaskStore(TaskStore):
    def __init__(
        self,
        store: DatabaseTaskStore,
        engine: AsyncEngine,
        known_ids: set[str],
        owner_resolver: OwnerResolver = resolve_user_scope,
    ) -> None:
        self._store = store
        self._engine = engine  # the store's: its writes queue with the agent's others (state/database.py)
        self._upsert = task_upsert(store, engine.dialect)
        self._connection: sqlite3.Connection | None = None  # where its writes run (connected at the first)
        self._writes = 0  # since the last checkpoint
        self._known = known_ids  # every task id in the database: a lookup of any other needs no query
        self._owner = owner_resolver
        self._unwritten: dict[str, _Unwritten] = {}
        self._riders: list[Rider] = []
        self._wake = asyncio.Event()
        self._resting = asyncio.Event()  # a version saved since the last write is one its task rests in
        self._written = asyncio.Event()
        self._written.set()
        self._refused = False  # the file refused a write: said once, until one succeeds

    async def save(self, task: Task, context: ServerCallContext) -> None:
        copy = Task()
        copy.CopyFrom(task)
        first = task.id not in self._known
        pending = self._unwritten[task.id] = _Unwritten(copy, context, self._owner(context))
        self._known.add(task.id)
        if first or task.status.state in RESTING:
            await self._write_through(pending, first)
        else:
            self.wake()

    async def _write_through(self, pending: _Unwritten, first: bool) -> None:
        """`pending`, and whatever rides with the writer, in the database before the save returns. A task's first
        version that cannot be written is forgotten and the save fails (no client learns of a task that a crash
        would lose); a resting version that cannot be is left to the writer, which tries again."""
        try:
            await self._write([pending])
        except Exception as exc:
            if first:
                self._unwritten.pop(pending.task.id, None)
                self._known.discard(pending.task.id)
                raise
            if not isinstance(exc, StateUnavailable):  # that one is said once, when the file first refuses
                log.exception("could not persist task %s as it rests; the writer tries again", pending.task.id)
            self._resting.set()
            self.wake()

    def wake(self) -> None:
        self._written.clear()
        self._wake.set()

    def carry(self, rider: Rider) -> None:
        self._riders.append(rider)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        pending = self._unwritten.get(task_id)
        if pending is not None:
            if pending.owner != self._owner(context):
                return None
            return kept(pending.task)
        if task_id not in self._known:
            return None
        return await self._store.get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        await self.flush()
        return await self._store.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await self.flush()
        await written(self._engine, partial(self._store.delete, task_id, context))
        self._known.discard(task_id)

    async def flush(self) -> None:
        """Returns once every saved version is in the database."""
        await self._written.wait()

    async def run(self) -> None:
        """The writer: until cancelled, persists the newest version of each task saved."""
        while True:
            await self._wake.wait()
            if not self._resting.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WRITE_DELAY):
                        await self._resting.wait()
            await asyncio.sleep(0)  # the event that caused the save was handed to its stream's task: it goes first
            self._resting.clear()
            self._wake.clear()
            await self._write_all(retry=True)

    async def close(self) -> None:
        """Writes what is left, once, and closes its connection (the engine's last one checkpoints the rest)."""
        try:
            await self._write_all(retry=False)
        finally:
            if self._connection is not None:
                self._connection.close()

    async def _write_all(self, retry: bool) -> None:
        while self._unwritten or any(rider.holds_unwritten() for rider in self._riders):
            batch = list(self._unwritten.values())
            try:
                await self._write(batch)
            except Exception as exc:  # a failed write must not stop the writer
                if not isinstance(exc, StateUnavailable):  # that one is said once, when the file first refuses
                    log.exception("could not persist %d task(s) and what rides with them", len(batch))
                if retry:
                    await asyncio.sleep(1)  # the versions stay in memory and are tried again
                    continue
                self._forget(batch)
        self._written.set()
        if self._writes >= CHECKPOINT_EVERY:
            await self._checkpoint()

    async def _write(self, batch: "Sequence[_Unwritten]") -> None:
        """`batch` and what rides with the writer, in one transaction; raises when it could not be written."""
        rows = [(kept(p.task), self._store.owner_resolver(p.context)) for p in batch]
        async with my_turn(self._engine):
            carried = [(rider, rider.unwritten()) for rider in self._riders]
            try:
                self._upsert.run(self._connected(), rows, [(r.sql, rows) for r, rows in carried if rows])
            except sqlite3.OperationalError as exc:  # full, read-only, an I/O error: the file, not the statement
                raise self._refusal(exc) from exc
        if self._refused:
            self._refused = False
            log.warning("the state file %s is written again", self._engine.url.database)
        self._forget(batch)
        for rider, written_rows in carried:
            rider.written(written_rows)
        self._writes += 1
        if self._writes >= CHECKPOINT_EVERY:
            self.wake()  # the writer checkpoints, off the request's path

    def _refusal(self, exc: sqlite3.OperationalError) -> StateUnavailable:
        path = self._engine.url.database
        if not self._refused:
            self._refused = True
            log.error("the state file %s cannot be written (%s): turns fail until it can", path, exc)
        return StateUnavailable(
            f"The agent's state file {path} cannot be written ({exc}): nothing of this task could be kept, so its "
            "turn was stopped. Free space there (or fix the file) and send the message again."
        )

    def _forget(self, batch: "Sequence[_Unwritten]") -> None:
        """`batch`'s versions off the unwritten ones, unless a newer version of a task came meanwhile."""
        for pending in batch:
            if self._unwritten.get(pending.task.id) is pending:
                del self._unwritten[pending.task.id]

    def _connected(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = open_on_loop(self._engine, "DEFERRED")
        return self._connection

    async def _checkpoint(self) -> None:
        self._writes = 0
        try:
            await checkpoint(self._engine)
        except Exception:  # the WAL grows until the next one; nothing written is lost
            log.exception("could not checkpoint the state file")
