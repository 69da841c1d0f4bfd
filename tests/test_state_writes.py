"""The writes a turn makes: the task writer's upsert, one statement on the loop, with the ledger's claims riding along,
no push-config read for a task without webhooks; the WAL those writes grow moved into the file off the loop.
Against a real SQLite file, counting the statements it is handed and reading the file."""

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabaseTaskStore
from a2a.types import Artifact, Message, Part, Task, TaskPushNotificationConfig, TaskState, TaskStatus
from sqlalchemy import Engine, event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from a2a_wrapper.push.store import PushConfigs
from a2a_wrapper.state import message_ledger, task_store
from a2a_wrapper.state.database import open_database, open_on_loop, writing
from a2a_wrapper.state.message_ledger import RETENTION, MessageKey, MessageLedger
from a2a_wrapper.state.task_rows import sdk_row, task_upsert
from a2a_wrapper.state.task_store import WriteBehindTaskStore

CALLER = ServerCallContext()


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = open_database(tmp_path / "state.db")
    yield engine
    await engine.dispose()


@contextmanager
def statements() -> Iterator[list[str]]:
    """The statements every SQLAlchemy engine of this process is handed meanwhile (the agent's and the loop's)."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement.split()[0])

    event.listen(Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", record)


def a_task(task_id: str, state: TaskState = TaskState.TASK_STATE_WORKING) -> Task:
    task = Task(
        id=task_id,
        context_id="ctx",
        status=TaskStatus(state=state),
        artifacts=[Artifact(artifact_id="response", parts=[Part(text="an answer")])],
        history=[Message(message_id="m-1", parts=[Part(text="a question")])],
    )
    task.status.timestamp.GetCurrentTime()
    task.metadata.update({"usage": {"inputTokens": 3}})
    return task


async def rows(engine: AsyncEngine) -> list[tuple[Any, ...]]:
    async with engine.connect() as db:
        return [tuple(row) for row in await db.execute(text("SELECT * FROM tasks ORDER BY id"))]


def bare_task(task_id: str) -> Task:
    """No timestamp, no artifacts, no metadata: the columns the SDK leaves empty or null."""
    return Task(id=task_id, context_id="ctx", status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))


@pytest.mark.parametrize("make", [a_task, bare_task], ids=["full", "bare"])
async def test_the_upsert_writes_the_row_the_sdks_save_writes_and_updates_it(engine: AsyncEngine, make: Any) -> None:
    store = DatabaseTaskStore(engine)
    await store.initialize()
    task = make("by-sdk")
    await store.save(task, CALLER)
    task.id = "ours"
    connection = open_on_loop(engine, "DEFERRED")
    upsert = task_upsert(store, engine.dialect)
    upsert.run(connection, [(task, "")])
    by_sdk, ours = await rows(engine)
    assert ours[1:] == by_sdk[1:]  # the same columns, the same bytes
    ended = a_task("ours", TaskState.TASK_STATE_COMPLETED)
    upsert.run(connection, [(ended, "")])
    connection.close()
    assert await store.get("ours", CALLER) == ended
    assert len(await rows(engine)) == 2


@pytest.mark.parametrize("make", [a_task, bare_task], ids=["full", "bare"])
def test_the_row_holds_what_the_sdks_model_holds(make: Any) -> None:
    store = DatabaseTaskStore(create_async_engine("sqlite+aiosqlite://"))
    task = make("t")
    model = store._to_orm(task, "owner")  # what the SDK's save puts in its model (a2a-sdk 1.3.0)
    expected = {attribute.key: getattr(model, attribute.key) for attribute in model.__mapper__.column_attrs}
    assert sdk_row(task, "owner") == expected


def loop_statements(monkeypatch: pytest.MonkeyPatch, opener: ModuleType) -> list[str]:
    """The statements run from now on on the loop connections `opener` opens (its first word each): the task
    writer's (task_store) or the ledger's (message_ledger)."""
    seen: list[str] = []

    def traced(engine: AsyncEngine, isolation_level: Any = None) -> sqlite3.Connection:
        connection = open_on_loop(engine, isolation_level)
        connection.set_trace_callback(lambda statement: seen.append(statement.split()[0]))
        return connection

    monkeypatch.setattr(opener, "open_on_loop", traced)
    return seen


async def test_the_writer_persists_every_task_it_holds_in_one_transaction(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = DatabaseTaskStore(engine)
    await database.initialize()
    store = WriteBehindTaskStore(database, engine, set())
    tasks = [a_task(f"task-{index}") for index in range(5)]
    seen = loop_statements(monkeypatch, task_store)
    for task in tasks:
        await store.save(task, CALLER)  # a task's first version: written through, before the save returns
        task.history.add(message_id=f"later-{task.id}")
        await store.save(task, CALLER)  # a later one, still running: behind the turn
    assert seen == ["BEGIN", "INSERT", "COMMIT"] * len(tasks)
    seen.clear()
    with statements() as through_the_engine:
        await store.close()
    assert seen == ["BEGIN", *["INSERT"] * len(tasks), "COMMIT"]  # one statement's rows, in one transaction
    assert through_the_engine == []
    assert [await database.get(task.id, CALLER) for task in tasks] == tasks


async def test_the_writers_wal_is_moved_into_the_file_every_so_many_writes(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_store, "CHECKPOINT_EVERY", 3)
    database = DatabaseTaskStore(engine)
    await database.initialize()
    store = WriteBehindTaskStore(database, engine, set())
    writer = asyncio.create_task(store.run())
    file = tmp_path / "state.db"
    try:
        for index in range(2):
            await store.save(a_task(f"kept-{index}"), CALLER)
            await asyncio.sleep(0)  # the writer wakes
            await store.flush()
            assert await database.get(f"kept-{index}", CALLER) is not None  # written: in the WAL
            assert b"kept-%d" % index not in file.read_bytes()  # not yet in the file
        await store.save(a_task("kept-2"), CALLER)
        async with asyncio.timeout(5):
            while True:  # the third write's checkpoint, off the loop
                if b"kept-2" in file.read_bytes():
                    break
                await asyncio.sleep(0.02)
        assert b"kept-0" in file.read_bytes() and b"kept-1" in file.read_bytes()
    finally:
        writer.cancel()
        await store.close()


async def test_a_tasks_first_version_and_each_it_rests_in_are_in_the_file_when_the_save_returns(
    engine: AsyncEngine, writer: WriteBehindTaskStore, ledger: MessageLedger
) -> None:
    """What a client is told next (the task's id; a state it rests in) is durable before it is told: the claim of
    the message that made the task in the same transaction as the task's first row."""
    assert await ledger.claim(MessageKey("caller", "ctx", "m-1"), "told") is None
    task = a_task("told")
    await writer.save(task, CALLER)
    assert await row_state(engine, "told") == "TASK_STATE_WORKING" and await kept_claims(engine) == ["told"]
    task.history.add(message_id="m-2")
    await writer.save(task, CALLER)  # a running task's later version waits for the writer
    task.status.state = TaskState.TASK_STATE_COMPLETED
    await writer.save(task, CALLER)
    assert await row_state(engine, "told") == "TASK_STATE_COMPLETED"


async def row_state(engine: AsyncEngine, task_id: str) -> str | None:
    """The state of the task's row in the file, read apart from the store (None: no row)."""
    task = await DatabaseTaskStore(engine).get(task_id, CALLER)
    return None if task is None else TaskState.Name(task.status.state)


@pytest.fixture
async def writer(engine: AsyncEngine) -> AsyncIterator[WriteBehindTaskStore]:
    database = DatabaseTaskStore(engine)
    await database.initialize()
    store = WriteBehindTaskStore(database, engine, set())
    running = asyncio.create_task(store.run())
    yield store
    running.cancel()
    await store.close()


@pytest.fixture
async def ledger(engine: AsyncEngine, writer: WriteBehindTaskStore) -> AsyncIterator[MessageLedger]:
    ledger = MessageLedger(engine, writer)
    await ledger.initialize()
    yield ledger
    ledger.close()


async def kept_claims(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as db:
        return list((await db.execute(text("SELECT task_id FROM message_ledger ORDER BY task_id"))).scalars())


async def test_a_claim_rides_with_the_task_writer_and_a_retry_gets_the_first_task(
    engine: AsyncEngine, writer: WriteBehindTaskStore, ledger: MessageLedger
) -> None:
    key = MessageKey("caller", "ctx", "m-1")
    with statements() as seen:
        assert await ledger.claim(key, "task-1") is None
    assert seen == []  # not through the engine: on the loop
    assert await ledger.claim(key, "task-2") == "task-1"  # from memory, before it is written
    await writer.flush()
    assert await kept_claims(engine) == ["task-1"]
    assert await ledger.claim(key, "task-2") == "task-1"  # from the file
    assert await ledger.claim(MessageKey("caller", "ctx", "m-2"), "task-3") is None
    await ledger.forget(key, "task-1")
    assert await ledger.claim(key, "task-4") is None
    assert await ledger.claim(key, "task-5") == "task-4"
    await ledger.forget(key, "task-4")  # forgotten before it was written: never written
    await writer.flush()
    assert await kept_claims(engine) == ["task-3"]


async def test_a_new_message_is_claimed_without_a_read_and_a_retry_reads_its_row(
    engine: AsyncEngine, writer: WriteBehindTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    earlier = MessageKey("caller", "ctx", "m-0")
    first = MessageLedger(engine, writer)
    await first.initialize()
    assert await first.claim(earlier, "task-0") is None
    await writer.flush()
    first.close()
    reads = loop_statements(monkeypatch, message_ledger)
    ledger = MessageLedger(engine, writer)  # a restart: the keys in the file are known from the start
    await ledger.initialize()
    try:
        reads.clear()
        key = MessageKey("caller", "ctx", "m-1")
        assert await ledger.claim(key, "task-1") is None
        assert reads == []
        await writer.flush()
        assert await ledger.claim(key, "task-2") == "task-1"
        assert await ledger.claim(earlier, "task-3") == "task-0"
        assert reads == ["SELECT", "SELECT"]  # each retry reads its row: it may have expired
    finally:
        ledger.close()


async def test_a_claim_of_an_earlier_run_is_honoured_after_a_restart(
    engine: AsyncEngine, writer: WriteBehindTaskStore, ledger: MessageLedger
) -> None:
    key = MessageKey("", "ctx", "m-1")
    assert await ledger.claim(key, "first") is None
    await writer.close()  # the agent stops: what is left is written
    ledger.close()
    database = DatabaseTaskStore(engine)
    await database.initialize()
    again = MessageLedger(engine, WriteBehindTaskStore(database, engine, set()))
    await again.initialize()
    try:
        assert await again.claim(key, "second") == "first"
    finally:
        again.close()


async def test_a_claim_is_committed_with_the_tasks_in_one_transaction(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = DatabaseTaskStore(engine)
    await database.initialize()
    store = WriteBehindTaskStore(database, engine, set())
    ledger = MessageLedger(engine, store)
    await ledger.initialize()
    seen = loop_statements(monkeypatch, task_store)
    assert await ledger.claim(MessageKey("", "ctx", "m-1"), "task-1") is None
    await store.save(a_task("task-1"), CALLER)
    await store.close()
    ledger.close()
    assert seen == ["BEGIN", "INSERT", "INSERT", "COMMIT"]  # the task and the claim
    assert await kept_claims(engine) == ["task-1"]


async def test_a_ledger_on_sqlite_without_the_task_writer_is_refused(engine: AsyncEngine) -> None:
    with pytest.raises(ValueError, match="task writer"):
        await MessageLedger(engine).initialize()


async def test_an_expired_entry_is_taken_over_by_the_next_claim(
    engine: AsyncEngine, writer: WriteBehindTaskStore, ledger: MessageLedger
) -> None:
    key = MessageKey("", "", "m-1")
    assert await ledger.claim(key, "old") is None
    await writer.flush()
    async with writing(engine) as db:
        await db.execute(text("UPDATE message_ledger SET accepted = accepted - :age"), {"age": RETENTION + 60})
    assert await ledger.claim(key, "new") is None
    assert await ledger.claim(key, "again") == "new"
    await writer.flush()
    assert await kept_claims(engine) == ["new"]


def a_webhook(config_id: str) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(id=config_id, url="https://hooks.example/a2a")


async def test_push_configs_know_without_a_query_which_tasks_have_webhooks(engine: AsyncEngine) -> None:
    configs = PushConfigs(engine)
    await configs.initialize()
    with statements() as seen:
        assert await configs.get_info_for_dispatch("task-1") == []
    assert seen == []
    await configs.set_info("task-1", a_webhook("one"), CALLER)
    await configs.set_info("task-1", a_webhook("two"), CALLER)
    assert [config.id for config in await configs.get_info_for_dispatch("task-1")] == ["one", "two"]
    await configs.delete_info("task-1", CALLER, "one")
    assert configs.registered("task-1")
    restarted = PushConfigs(engine)
    await restarted.initialize()
    assert restarted.registered("task-1") and not restarted.registered("task-2")
    await restarted.forget("task-1", ["two"])
    assert not restarted.registered("task-1")
    assert await restarted.get_info_for_dispatch("task-1") == []
