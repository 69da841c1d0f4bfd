"""Liveness and readiness, apart: /health/live is the process answering; /health/ready (and /health, its old name
with the detail) is the state database answering and the backend's process running. Neither waits on the
backend: here it is frozen for real (SIGSTOP: the extreme of busy), and PostgreSQL is stopped for real."""

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import event

from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.state.engines import StateDatabase, open_state
from a2a_wrapper.state.readiness import FRESH, StateCheck
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import send, task_answer
from tests.helpers.postgres import PostgresServer, postgres_for_tests
from tests.helpers.tenants import sole_backend

PATHS = ("/health/live", "/health/ready", "/health")
AT_ONCE = 1.0  # seconds: what "at once" may take on a loaded test machine; a backend probe's timeout was 3 s


async def timed(http: httpx.AsyncClient, url: str) -> tuple[float, httpx.Response]:
    started = time.monotonic()
    response = await http.get(url)
    return time.monotonic() - started, response


@pytest.mark.slow  # a real agent and OpenCode
async def test_liveness_and_readiness_answer_at_once_while_the_backend_cannot_answer(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    frozen = sole_backend(agent.agent)._child.pid
    os.killpg(frozen, signal.SIGSTOP)
    try:
        async with asyncio.timeout(30):
            answers = await asyncio.gather(*(timed(http, agent.url + path) for path in PATHS * 10))
    finally:
        os.killpg(frozen, signal.SIGCONT)
    slowest = max(seconds for seconds, _ in answers)
    print(f"backend frozen: {len(answers)} health answers, the slowest in {slowest * 1000:.0f} ms")
    assert slowest < AT_ONCE, f"the slowest answer took {slowest:.2f} s"
    assert {response.status_code for _, response in answers} == {200}
    ready = next(response.json() for _, response in answers if response.url.path == "/health/ready")
    assert ready["state"]["ok"] is True and ready["state"]["database"].startswith("state_dir ")
    assert ready["backend"]["healthy"] is True and "not_ready" not in ready
    task = await send(http, agent.jsonrpc, "thawed")
    assert task_answer(task) == "Offline model reply: thawed"


async def test_readiness_checks_the_database_once_however_many_ask(tmp_path: Path) -> None:
    database = StateDatabase(path=tmp_path / "state.db")
    engine = open_state(database)
    statements: list[str] = []
    event.listen(engine.sync_engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    check = StateCheck(engine, database)
    try:
        async with asyncio.timeout(30):
            answers = await asyncio.gather(*(check.problem() for _ in range(200)))
            assert answers == [None] * 200
            assert statements == ["SELECT 1"]
            await asyncio.sleep(FRESH)
            assert await check.problem() is None
            assert statements == ["SELECT 1", "SELECT 1"], "checked again once its answer is stale"
    finally:
        await engine.dispose()


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL of this test's own: it is stopped in the middle."""
    with postgres_for_tests() as server:
        yield server


@pytest.fixture
async def on_postgres(
    own_postgres: PostgresServer, make_settings: SettingsFactory, offline_model: OfflineModel
) -> AsyncIterator[ServedAgent]:
    url = own_postgres.new_database()
    async with serving(make_settings(auto_approve=True, state={"url": url}), offline_model) as served:
        yield served


@pytest.mark.slow  # a PostgreSQL of its own
async def test_readiness_names_the_database_while_postgresql_is_down_and_liveness_stays(
    on_postgres: ServedAgent, own_postgres: PostgresServer, http: httpx.AsyncClient
) -> None:
    url = on_postgres.url
    assert (await http.get(url + "/health/ready")).status_code == 200
    own_postgres.stop()
    stopped = time.monotonic()
    try:
        async with asyncio.timeout(30):
            while (down := await http.get(url + "/health/ready")).status_code == 200:  # noqa: ASYNC110
                await asyncio.sleep(0.2)  # the last answer, kept for a second
            print(f"PostgreSQL stopped: not ready after {time.monotonic() - stopped:.2f} s")
            seconds, live = await timed(http, url + "/health/live")
            old_name = await http.get(url + "/health")
    finally:
        own_postgres.start()
    assert down.status_code == 503 and old_name.status_code == 503
    assert live.status_code == 200 and seconds < AT_ONCE
    body = down.json()
    where = f"state.url postgresql://postgres@127.0.0.1:{own_postgres.port}/"
    assert body["state"]["ok"] is False and body["status"] == "degraded"
    (reason,) = body["not_ready"]
    assert reason.startswith(f"state: {where}"), reason
    refused = f"connection refused (nothing listens at 127.0.0.1:{own_postgres.port})"
    assert reason.endswith(f": the state database cannot be used: {refused}"), reason
    async with asyncio.timeout(30):
        while (await http.get(url + "/health/ready")).status_code != 200:  # noqa: ASYNC110
            await asyncio.sleep(0.2)
