"""The tenant pool's bookkeeping, with a small hand-written backend launched through the pool's constructor:
which caller's backend each call reaches, the cap and its refusal, the idle stop, health while one starts.

The boundary itself (two real OpenCodes, one caller's tools looking for the other's conversation) is in
tests/test_tenants.py.
"""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest

from a2a_wrapper.backends.base import Batch, Capabilities, Health, Prompt, Session
from a2a_wrapper.backends.tenants import TenantPool
from a2a_wrapper.backends.tenants.folders import TENANTS, qualified, split, tenant_id
from a2a_wrapper.config.files import load_config
from a2a_wrapper.config.settings import AgentSettings, CardSettings, TenantSettings
from a2a_wrapper.errors import BackendUnavailable, CallerLimit, ConfigError, SessionGone
from a2a_wrapper.events import Done, Text

pytestmark = pytest.mark.timeout(20)


class FakeBackend:
    """Sessions named by a counter; a turn answers with the backend's folder, so a test sees where it ran."""

    kind = "opencode"
    capabilities = Capabilities(questions=True, deny_reason=True, resume=True)

    def __init__(self, folder: Path, pid: int) -> None:
        self.folder = folder
        self.pid = pid
        self.restarts = 0
        self.sessions: dict[str, str] = {}  # id -> context key
        self.resumed: list[str | None] = []
        self.closed: list[str] = []

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def health(self) -> Health:
        return {"kind": self.kind, "restarts": self.restarts, "pid": self.pid, "healthy": True}

    async def open_session(self, context_key: str, resume: str | None = None) -> Session:
        self.resumed.append(resume)
        if resume in self.sessions:
            return Session(resume, created=False)
        session_id = f"ses_{len(self.sessions)}"
        self.sessions[session_id] = context_key
        return Session(session_id, created=True)

    async def close_session(self, session_id: str) -> None:
        self.closed.append(session_id)

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        return len(session_ids & set(self.sessions))

    def turn(self, session: Session, prompt: Prompt) -> "FakeTurn":
        return FakeTurn(self, session)


class FakeTurn:
    def __init__(self, backend: FakeBackend, session: Session) -> None:
        self._backend = backend
        self._session = session

    async def _batches(self) -> AsyncIterator[Batch]:
        yield (Text(delta=f"{self._backend.folder.name}/{self._session.id}"), Done(outcome="completed"))

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._batches()

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        pass

    async def answer(self, question_id: str, text: str | None) -> None:
        pass

    async def abort(self) -> None:
        pass


class Launches:
    """The pool's launcher: records each backend started (by its state folder) and each stopped."""

    def __init__(self) -> None:
        self.started: list[FakeBackend] = []
        self.stopped: list[FakeBackend] = []
        self.gate: asyncio.Event | None = None  # set: starts wait until it is set
        self.failure: Exception | None = None
        self.a_stop = asyncio.Event()  # set at each stop

    @asynccontextmanager
    async def __call__(self, settings: AgentSettings) -> AsyncIterator[FakeBackend]:
        assert settings.state_dir is not None
        if self.gate is not None:
            await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        backend = FakeBackend(settings.state_dir, 1000 + len(self.started))
        self.started.append(backend)
        try:
            yield backend
        finally:
            self.stopped.append(backend)
            self.a_stop.set()

    def live(self) -> list[FakeBackend]:
        return [backend for backend in self.started if backend not in self.stopped]


class Busy:
    def __init__(self) -> None:
        self.callers: set[str] = set()

    def __call__(self) -> set[str]:
        return self.callers


def agent(tmp_path: Path, **tenants: Any) -> AgentSettings:
    return AgentSettings(card=CardSettings(name="pool"), state_dir=tmp_path, tenants=TenantSettings(**tenants))


@asynccontextmanager
async def pool_of(
    tmp_path: Path, launches: Launches, busy: Busy | None = None, warm: tuple[str, ...] = (), **tenants: Any
) -> AsyncIterator[TenantPool]:
    pool = TenantPool(agent(tmp_path, **tenants), launches, busy or Busy(), warm)
    try:
        await pool.start()
        yield pool
    finally:
        await pool.stop()


async def answer_of(pool: TenantPool, session: Session) -> str:
    texts = [
        event.delta async for batch in pool.turn(session, Prompt("hi")) for event in batch if isinstance(event, Text)
    ]
    return "".join(texts)


async def test_each_caller_runs_in_a_backend_of_its_own_named_by_an_id_not_the_name(tmp_path: Path) -> None:
    launches = Launches()
    async with pool_of(tmp_path, launches) as pool:
        alice = await pool.open_session("alice/ctx")
        bob = await pool.open_session("bob/ctx")
        again = await pool.open_session("alice/other")
        assert [b.folder for b in launches.started] == [
            tmp_path / TENANTS / tenant_id("alice"),
            tmp_path / TENANTS / tenant_id("bob"),
        ]
        assert "alice" not in tenant_id("alice") and tenant_id("alice") != tenant_id("bob")
        assert split(alice.id) == (tenant_id("alice"), "ses_0") and split(again.id) == (tenant_id("alice"), "ses_1")
        assert await answer_of(pool, bob) == f"{tenant_id('bob')}/ses_0"
        assert await answer_of(pool, again) == f"{tenant_id('alice')}/ses_1"
        await pool.close_session(bob.id)
        assert launches.started[1].closed == ["ses_0"] and launches.started[0].closed == []
        crossed = {qualified(tenant_id("alice"), "ses_0"), qualified(tenant_id("bob"), "ses_1")}
        assert await pool.reject_pending(crossed, "gone") == 1, "bob's backend has no ses_1 (alice's has)"


@pytest.mark.parametrize(
    ("resume", "handed_over"),
    [
        (qualified(tenant_id("alice"), "ses_0"), "ses_0"),  # hers
        (qualified(tenant_id("bob"), "ses_0"), None),  # made by bob's backend: never handed to hers
        ("ses_0", None),  # stored by a version before tenants: its backend is not one of the pool's
    ],
)
async def test_a_session_is_resumed_only_in_the_backend_that_made_it(
    tmp_path: Path, resume: str, handed_over: str | None
) -> None:
    launches = Launches()
    async with pool_of(tmp_path, launches) as pool:
        await pool.open_session("alice/first")
        await pool.open_session("alice/ctx", resume=resume)
        assert launches.started[0].resumed == [None, handed_over]


async def test_a_session_of_an_older_version_is_gone_and_closes_as_nothing(tmp_path: Path) -> None:
    launches = Launches()
    async with pool_of(tmp_path, launches) as pool:
        with pytest.raises(SessionGone):
            await answer_of(pool, Session("ses_0", created=False))
        await pool.close_session("ses_0")
        assert launches.started == []


async def test_past_the_cap_a_new_caller_is_refused_while_the_busy_one_goes_on(tmp_path: Path) -> None:
    launches, busy = Launches(), Busy()
    async with pool_of(tmp_path, launches, busy, max_running=1) as pool:
        alice = await pool.open_session("alice/ctx")
        busy.callers.add("alice")
        with pytest.raises(CallerLimit, match=r"at its caller limit.*at most 1 callers.*tenants\.max_running"):
            await pool.admit("bob")
        assert await answer_of(pool, alice) == f"{tenant_id('alice')}/ses_0"
        assert len(launches.started) == 1 and not pool.running("bob")

        busy.callers.clear()  # her turn is over: her idle backend makes room
        await pool.admit("bob")
        assert [b.folder.name for b in launches.live()] == [tenant_id("bob")]
        assert launches.stopped == launches.started[:1]


async def test_the_longest_idle_backend_makes_room(tmp_path: Path) -> None:
    launches = Launches()
    async with pool_of(tmp_path, launches, max_running=2) as pool:
        await pool.admit("alice")
        await pool.admit("bob")
        await pool.admit("bob")  # used again: alice is the longer idle
        await pool.admit("carol")
        assert sorted(b.folder.name for b in launches.live()) == sorted([tenant_id("bob"), tenant_id("carol")])


async def test_a_turn_in_progress_keeps_its_backend_from_making_room(tmp_path: Path) -> None:
    launches = Launches()
    async with pool_of(tmp_path, launches, max_running=1) as pool:
        session = await pool.open_session("alice/ctx")
        turn = aiter(pool.turn(session, Prompt("hi")))
        await anext(turn)  # the turn has its first batch and is not closed: the front end may still drive it
        with pytest.raises(CallerLimit):
            await pool.admit("bob")
        await turn.aclose()  # type: ignore[attr-defined]
        await pool.admit("bob")


async def test_an_idle_backend_is_stopped_and_started_again_from_its_folder(tmp_path: Path) -> None:
    launches, busy = Launches(), Busy()
    async with pool_of(tmp_path, launches, busy, idle_stop=0.3) as pool:
        first = await pool.open_session("alice/ctx")
        busy.callers.add("bob")
        await pool.admit("bob")
        async with asyncio.timeout(5):
            await launches.a_stop.wait()
        assert launches.stopped == launches.started[:1], "bob's is held by the front end: it runs on"
        assert pool.running("bob")

        resumed = await pool.open_session("alice/ctx", resume=first.id)
        assert launches.started[2].folder == launches.started[0].folder
        assert resumed.id == qualified(tenant_id("alice"), "ses_0") and resumed.created is True


async def test_health_counts_a_starting_backend_without_waiting_for_it(tmp_path: Path) -> None:
    launches = Launches()
    async with pool_of(tmp_path, launches, warm=("",)) as pool:
        health = await pool.health()
        assert health["healthy"] is True and health["pid"] == 1000, "one caller's backend shows as a single one did"
        assert health["tenants"]["running"] == 1 and health["tenants"]["backends"][0]["tenant"] == tenant_id("")

        launches.gate = asyncio.Event()
        starting = asyncio.create_task(pool.admit("bob"))
        await asyncio.sleep(0)
        async with asyncio.timeout(1):
            health = await pool.health()
        assert health["tenants"]["starting"] == 1 and health["tenants"]["running"] == 1
        launches.gate.set()
        await starting
        health = await pool.health()
        assert health["tenants"]["running"] == 2 and "pid" not in health


async def test_a_backend_that_cannot_start_is_refused_and_tried_again_next_time(tmp_path: Path) -> None:
    launches = Launches()
    launches.failure = ConfigError("bubblewrap is missing")
    async with pool_of(tmp_path, launches) as pool:
        with pytest.raises(BackendUnavailable, match="could not be started: bubblewrap is missing"):
            await pool.admit("alice")
        launches.failure = None
        await pool.admit("alice")
        assert pool.running("alice")


async def test_a_stop_during_a_start_leaves_nothing_running(tmp_path: Path) -> None:
    launches = Launches()
    launches.gate = asyncio.Event()
    pool = TenantPool(agent(tmp_path), launches, Busy())
    await pool.start()
    starting = asyncio.create_task(pool.admit("alice"))
    await asyncio.sleep(0)
    await pool.stop()
    with pytest.raises(BackendUnavailable, match="stopped while it was starting"):
        await starting
    assert launches.live() == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tenants:\n  max_running: 0\n", "tenants.max_running: Input should be greater than 0 (got 0)"),
        ("tenants:\n  idleStop: -5\n", "tenants.idle_stop: Input should be greater than 0 (got -5)"),
        ("tenants:\n  idle_stop: soon\n", "tenants.idle_stop: Input should be a valid number"),
    ],
)
def test_a_bad_tenants_setting_names_its_key_and_value(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(f"card:\n  name: pool\n{text}")
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    assert message in str(refused.value)
