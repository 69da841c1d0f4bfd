"""The agent's state on both engines: the SQLite file and a real PostgreSQL (tests/helpers/postgres.py).

The same state modules, the same schema (migrations.py), the same answers; and on PostgreSQL what replicas need:
migrations that two starts run at once, and leases that keep a context on one replica.
"""

import asyncio
import dataclasses
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from a2a.server.cluster import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabaseTaskStore
from a2a.types import (
    ListTasksRequest,
    Message,
    Part,
    Role,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_wrapper.config.files import load_config
from a2a_wrapper.config.settings import SessionSettings
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.push.store import PushConfigs
from a2a_wrapper.shield import Rule
from a2a_wrapper.state.audit import AuditEntry, AuditLog, recent
from a2a_wrapper.state.context_rules import ContextRules
from a2a_wrapper.state.engines import StateDatabase, is_shared, open_state
from a2a_wrapper.state.leases import ContextHeldElsewhere, ContextLeases, Replica, expired_leases
from a2a_wrapper.state.message_ledger import MessageKey, MessageLedger
from a2a_wrapper.state.migrations import STEPS, migrate
from a2a_wrapper.state.orphans import OrphanSweep
from a2a_wrapper.state.outage import StateOutage
from a2a_wrapper.state.recovery import as_owner, lost_with
from a2a_wrapper.state.sessions import ContextKey, SessionMap
from a2a_wrapper.state.shared_tasks import SharedTaskStore
from a2a_wrapper.state.task_store import WriteBehindTaskStore

SECRET = "hunter2-not-a-real-password"
KEY = ContextKey("alice", "ctx-1")


def _rule(name: str) -> Rule:
    return Rule(name=name, decision="allow", tools=(name,))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])  # slow: a real server
def database(request: pytest.FixtureRequest, tmp_path: Path) -> StateDatabase:
    if request.param == "sqlite":
        return StateDatabase(path=tmp_path / "state.db")
    return StateDatabase(url=request.getfixturevalue("postgres_url"))


@pytest.fixture
async def engine(database: StateDatabase) -> AsyncIterator[AsyncEngine]:
    engine = open_state(database)
    try:
        async with asyncio.timeout(30):
            await migrate(engine)
        yield engine
    finally:
        await engine.dispose()


async def test_migrations_create_every_table_once(engine: AsyncEngine, database: StateDatabase) -> None:
    async with asyncio.timeout(30):
        second = open_state(database)  # a second start: another process's engine on the same database
        try:
            assert await migrate(second) == 0, "a second start applies nothing"
        finally:
            await second.dispose()
        async with engine.connect() as db:
            tables = set(await db.run_sync(lambda sync: inspect(sync).get_table_names()))
            versions = [row[0] for row in await db.execute(text("SELECT version FROM schema_version"))]
    assert {"tasks", "task_versions", "task_events", "push_notification_configs", "context_sessions"} <= tables
    assert {"context_rules", "audit", "message_ledger", "context_leases"} <= tables
    assert versions == [step.version for step in STEPS]


@pytest.mark.slow  # a real PostgreSQL
async def test_two_replicas_starting_together_migrate_one_after_the_other(postgres_url: str) -> None:
    engines = [open_state(StateDatabase(url=postgres_url)) for _ in range(3)]
    try:
        async with asyncio.timeout(60):
            applied = await asyncio.gather(*(migrate(engine) for engine in engines))
    finally:
        for engine in engines:
            await engine.dispose()
    assert sorted(applied) == [0, 0, len(STEPS)]


async def test_an_older_sqlite_file_keeps_its_rules_in_order(tmp_path: Path) -> None:
    database = tmp_path / "state.db"
    with sqlite3.connect(database) as db:  # the layout before schema_version: rules ordered by rowid alone
        db.execute("CREATE TABLE context_rules (caller TEXT NOT NULL, context_id TEXT NOT NULL, rule TEXT NOT NULL)")
        for tool in ("bash", "edit", "read"):
            db.execute("INSERT INTO context_rules VALUES ('alice', 'ctx-1', ?)", (_rule(tool).model_dump_json(),))
    engine = open_state(StateDatabase(path=database))
    try:
        async with asyncio.timeout(30):
            await migrate(engine)
            rules = await ContextRules(engine).of(KEY)
    finally:
        await engine.dispose()
    assert [rule.name for rule in rules] == ["bash", "edit", "read"]


async def test_context_rules_come_back_in_the_order_given(engine: AsyncEngine) -> None:
    async with asyncio.timeout(30):
        await ContextRules(engine).add(KEY, _rule("bash"))
        await ContextRules(engine).add(KEY, _rule("edit"))
        await ContextRules(engine).add(ContextKey("bob", KEY.context_id), _rule("read"))
        assert [rule.name for rule in await ContextRules(engine).of(KEY)] == ["bash", "edit"]


async def test_audit_entries_are_read_back_newest_first(engine: AsyncEngine, database: StateDatabase) -> None:
    entry = AuditEntry(time.time(), "agent", "ctx", "task", "alice", "bash", "shell", "ls", "allow", "r1", "rules", 1.5)
    async with asyncio.timeout(30):
        await AuditLog(engine).record(entry)
        await AuditLog(engine).record(dataclasses.replace(entry, time=entry.time + 1, decision="deny"))
        entries = await asyncio.to_thread(recent, database, 10)
        denied = await asyncio.to_thread(recent, database, 10, "deny")
    assert [e.decision for e in entries] == ["deny", "allow"]
    assert [e.decision for e in denied] == ["deny"]


async def test_a_retried_message_gets_the_first_attempts_task(engine: AsyncEngine) -> None:
    writer = None if is_shared(engine) else WriteBehindTaskStore(DatabaseTaskStore(engine), engine, set())
    ledger = MessageLedger(engine, writer)  # on SQLite the claims ride with the task writer
    key = MessageKey("alice", "ctx", "m-1")
    async with asyncio.timeout(30):
        await ledger.initialize()
        try:
            assert await ledger.claim(key, "task-1") is None
            assert await ledger.claim(key, "task-2") == "task-1"
            await ledger.forget(key, "task-1")
            assert await ledger.claim(key, "task-3") is None
        finally:
            ledger.close()


class _Backend:
    """A session backend that resumes nothing it did not open itself (a replica's own backend)."""

    kind = "opencode"

    def __init__(self) -> None:
        self.sessions: set[str] = set()

    async def open_session(self, context_key: str, resume: str | None = None) -> "_Opened":
        if resume in self.sessions:
            return _Opened(resume, created=False)
        opened = _Opened(f"s-{len(self.sessions)}-{id(self)}", created=True)
        self.sessions.add(opened.id)
        return opened

    async def close_session(self, session_id: str) -> None:
        self.sessions.discard(session_id)


class _Opened:
    def __init__(self, id: str, created: bool) -> None:
        self.id = id
        self.created = created


async def test_a_context_moved_to_another_backend_says_its_session_was_recreated(engine: AsyncEngine) -> None:
    first, second = (SessionMap(engine, _Backend(), SessionSettings(), busy=lambda key: False) for _ in range(2))
    async with asyncio.timeout(30):
        opened = await first.session_for(KEY)
        assert (opened.created, opened.recreated) == (True, False)
        assert (await first.session_for(KEY)).id == opened.id
        moved = await second.session_for(KEY)
        assert (moved.created, moved.recreated) == (True, True)
        assert await second.known_sessions() == {moved.id}


async def test_push_configs_are_kept_per_task(engine: AsyncEngine) -> None:
    configs = PushConfigs(engine)
    owner = ServerCallContext()
    async with asyncio.timeout(30):
        await configs.initialize()
        config = TaskPushNotificationConfig(id="c1", task_id="t1", url="https://hooks.example/a2a")
        await configs.set_info("t1", config, owner)
        restarted = PushConfigs(engine)
        await restarted.initialize()
        assert restarted.registered("t1")
        assert [c.url for c in await restarted.get_info_for_dispatch("t1")] == ["https://hooks.example/a2a"]
        await restarted.forget("t1", ["c1"])
        assert await restarted.get_info_for_dispatch("t1") == []


@pytest.mark.slow  # a real PostgreSQL
async def test_shared_tasks_round_trip_redacted_and_versioned(postgres_url: str) -> None:
    engine = open_state(StateDatabase(url=postgres_url))
    owner = ServerCallContext()
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    task = Task(
        id="t-1",
        context_id="ctx-1",
        status=TaskStatus(state=TaskState.TASK_STATE_WORKING),
        history=[Message(message_id="m", role=Role.ROLE_USER, parts=[Part(text=f"use {secret}")])],
    )
    try:
        async with asyncio.timeout(30):
            await migrate(engine)
            store = SharedTaskStore(engine, StateOutage(engine, postgres_url, wait=1.0))
            version = await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=owner)
            stored = await store.get("t-1", owner)
            listed = await store.list(ListTasksRequest(), owner)
    finally:
        await engine.dispose()
    assert stored is not None and stored.version == version
    assert secret not in stored.task.history[0].parts[0].text
    assert [t.id for t in listed.tasks] == ["t-1"]


@pytest.mark.slow  # a real PostgreSQL
async def test_a_context_runs_on_one_replica_until_its_lease_is_let_go_or_expires(postgres_url: str) -> None:
    engine = open_state(StateDatabase(url=postgres_url))
    taken: list[tuple[ContextKey, str]] = []

    async def taken_over(key: ContextKey, holder: str) -> None:
        taken.append((key, holder))

    def replica(name: str, lease: float) -> ContextLeases:
        return ContextLeases(engine, Replica(name, f"http://{name}:8000"), lease, lambda key: False, taken_over)

    try:
        async with asyncio.timeout(30):
            await migrate(engine)
            a, b = replica("a", 30), replica("b", 30)
            await a.take(KEY)
            await a.take(KEY)  # its own: renewed
            with pytest.raises(ContextHeldElsewhere, match=r"running on replica a \(http://a:8000\).* ends in 30 s"):
                await b.take(KEY)
            await a.close()
            await b.take(KEY)
            assert taken == [], "a lease let go is no takeover"
            short = replica("c", 0.2)
            await short.take(ContextKey("alice", "ctx-2"))
            await asyncio.sleep(0.3)  # the lease runs out: what a replica that died leaves
            await b.take(ContextKey("alice", "ctx-2"))
            assert taken == [(ContextKey("alice", "ctx-2"), "c")]
    finally:
        await engine.dispose()


@pytest.mark.slow  # a real PostgreSQL
async def test_the_sweep_fails_what_a_dead_replica_left_and_nothing_a_live_one_runs(postgres_url: str) -> None:
    engine = open_state(StateDatabase(url=postgres_url))
    owner = as_owner("")

    async def saved(task_id: str, context_id: str, state: TaskState, seconds_ago: float = 0.0) -> None:
        status = TaskStatus(state=state)
        status.timestamp.FromSeconds(int(time.time() - seconds_ago))
        task = Task(id=task_id, context_id=context_id, status=status)
        await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=owner)

    async def state_of(task_id: str) -> tuple[str, str]:
        found = await store.get(task_id, owner)
        assert found is not None
        status = found.task.status
        return TaskState.Name(status.state), "".join(part.text for part in status.message.parts)

    try:
        async with asyncio.timeout(30):
            await migrate(engine)
            store = SharedTaskStore(engine, StateOutage(engine, postgres_url, wait=1.0))
            dead = ContextLeases(engine, Replica("gone", "http://gone:8000"), 0.2, lambda key: False, _no_takeover)
            live = ContextLeases(engine, Replica("alive", "http://alive:8000"), 30, lambda key: True, _no_takeover)
            await dead.take(ContextKey("", "ctx-dead"))
            await live.take(ContextKey("", "ctx-live"))
            await saved("running", "ctx-dead", TaskState.TASK_STATE_WORKING)
            await saved("asking", "ctx-dead", TaskState.TASK_STATE_INPUT_REQUIRED)
            await saved("queued-long-ago", "ctx-dead", TaskState.TASK_STATE_SUBMITTED, seconds_ago=60)
            await saved("just-sent", "ctx-dead", TaskState.TASK_STATE_SUBMITTED)  # a live replica may take it over
            await saved("done", "ctx-dead", TaskState.TASK_STATE_COMPLETED)
            await saved("elsewhere", "ctx-live", TaskState.TASK_STATE_WORKING)
            await asyncio.sleep(0.3)  # the dead replica's lease runs out
            assert await OrphanSweep(engine, store, lease=30, replica="gone").sweep() == 0, "its own: never swept"
            sweep = OrphanSweep(engine, store, lease=30, replica="alive")
            assert await sweep.sweep() == 3
            assert await sweep.sweep() == 0, "a task is failed once"
            failed = ("TASK_STATE_FAILED", lost_with("gone"))
            assert [await state_of(t) for t in ("running", "asking", "queued-long-ago")] == [failed] * 3
            assert (await state_of("just-sent"))[0] == "TASK_STATE_SUBMITTED"
            assert (await state_of("done"))[0] == "TASK_STATE_COMPLETED"
            assert (await state_of("elsewhere"))[0] == "TASK_STATE_WORKING"
            assert [lease.key.context_id for lease in await expired_leases(engine)] == ["ctx-dead"], (
                "kept while a task of it may still be taken over"
            )
    finally:
        await engine.dispose()


async def _no_takeover(key: ContextKey, holder: str) -> None:
    raise AssertionError(f"{key} was taken over from {holder}")


def test_a_state_url_of_another_engine_is_refused_with_its_password_masked(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(f"card: {{name: a}}\nstate: {{url: 'mysql://app:{SECRET}@db/state'}}\n")
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    assert "state.url: not a PostgreSQL URL" in str(refused.value)
    assert "mysql://app:***@db/state" in str(refused.value)
    assert SECRET not in str(refused.value)


def test_the_state_url_comes_from_the_environment_and_shows_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text("card: {name: a}\n")
    monkeypatch.setenv("A2A_WRAP_STATE__URL", f"postgresql://app:{SECRET}@db:5432/state")
    settings = load_config(config)
    assert settings.state.url == f"postgresql://app:{SECRET}@db:5432/state"
    assert str(StateDatabase(url=settings.state.url)) == "postgresql://app:***@db:5432/state"
