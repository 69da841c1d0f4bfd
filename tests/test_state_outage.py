"""Drills: the state database (PostgreSQL) stopped for real in the middle of a streamed turn, then started again on
the same data folder and port. The open stream ends with a final status: the real one when the database is back
within `state.outage_wait`, else failed with a sentence naming the database (its password masked); once it is
back, GetTask shows no task `working`. A message sent during the outage gets one clear sentence, and no task. The
log says so once per outage, not once per event.

Real processes: a PostgreSQL of the test's own (tests/helpers/postgres.py), `a2a-wrap serve`
(tests/helpers/serve_process.py), the real OpenCode on the offline model kept busy by `[[long:N]] [[slow:S]]`.
"""

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import SettingsFactory
from tests.helpers.a2a_wire import V1, rpc, status_text, task_answer, user_message
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.postgres import PostgresServer, postgres_for_tests
from tests.helpers.serve_process import LoggedServe, read_log, serve_config, start_serve, wait_healthy

pytestmark = pytest.mark.slow

PASSWORD = "outage-secret-7f3a"  # the server trusts local connections: accepted, ignored, and never shown
OUTAGE = 10.0  # seconds the database is down, as in the drill


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL this test alone stops and starts (the run's shared one serves other tests meanwhile)."""
    with postgres_for_tests() as server:
        yield server


ServeOn = Callable[[float], Awaitable[LoggedServe]]


@pytest.fixture
async def serve_on(
    tmp_path: Path, make_settings: SettingsFactory, own_postgres: PostgresServer, http: httpx.AsyncClient
) -> AsyncIterator[ServeOn]:
    """Starts `a2a-wrap serve` on the test's PostgreSQL (its URL with a password) with `state.outage_wait`."""
    started: list[tuple[LoggedServe, asyncio.Task[None]]] = []

    async def serve(outage_wait: float) -> LoggedServe:
        settings = make_settings(state_dir=tmp_path / "state")
        database = own_postgres.new_database().replace("postgres@", f"postgres:{PASSWORD}@")
        state = {"url": database, "outage_wait": outage_wait}
        config = tmp_path / "agent.yaml"
        config.write_text(
            yaml.safe_dump(serve_config(settings, "outage", tmp_path / "state", auto_approve=True, state=state))
        )
        agent = LoggedServe(settings.advertised_url, await start_serve(config))
        started.append((agent, asyncio.create_task(read_log(agent))))
        await wait_healthy(http, agent.url)
        return agent

    try:
        yield serve
    finally:
        for agent, reading in started:
            if agent.process.returncode is None:
                agent.process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(30):
                await agent.process.wait()
            await reading


async def stream_payloads(http: httpx.AsyncClient, url: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    """SendStreamingMessage: every payload of the SSE stream (a `result` or an `error`), in order."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}}
    payloads: list[dict[str, Any]] = []
    async with http.stream("POST", url, json=body, headers=V1) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                payloads.append(json.loads(line[5:]))
    return payloads


@dataclass
class Drill:
    payloads: list[dict[str, Any]]  # the streamed turn's, in order
    refused: dict[str, Any]  # the answer to a message sent during the outage
    task: dict[str, Any]  # GetTask of the streamed turn's task once the database is back
    listed: list[dict[str, Any]]  # ListTasks then: every task the agent holds


async def outage_drill(
    served: LoggedServe, postgres: PostgresServer, http: httpx.AsyncClient, model: OfflineModel, words: str
) -> Drill:
    """Streams a turn the offline model keeps running ~20 s, stops the database for OUTAGE seconds a second into
    it, sends a message meanwhile, starts the database again, and reads what a client then sees."""
    streaming = asyncio.create_task(
        stream_payloads(http, served.jsonrpc, user_message(f"[[long:200]] [[slow:20]] {words}"))
    )
    await wait_until_the_model_receives(model, words)
    await asyncio.sleep(1)
    stopped = time.monotonic()
    await asyncio.to_thread(postgres.stop)
    refused = await rpc(http, served.jsonrpc, "SendMessage", {"message": user_message("sent during the outage")})
    await asyncio.sleep(OUTAGE - (time.monotonic() - stopped))
    await asyncio.to_thread(postgres.start)
    payloads = await streaming
    task_id = payloads[0]["result"]["task"]["id"]
    task = await rpc(http, served.jsonrpc, "GetTask", {"id": task_id})
    listed = await rpc(http, served.jsonrpc, "ListTasks", {})
    assert "result" in task and "result" in listed, (task, listed)
    return Drill(payloads, refused, task["result"], listed["result"]["tasks"])


def assert_refused_with_a_sentence(drill: Drill, served: LoggedServe) -> None:
    error = drill.refused["error"]
    assert error["code"] == -32603
    assert error["message"].startswith("The agent's state database postgresql://postgres:***@127.0.0.1:"), error
    assert "cannot be reached" in error["message"] and "nothing was run or stored" in error["message"]
    assert [task["id"] for task in drill.listed] == [drill.task["id"]], "the refused message made no task"
    assert not any(PASSWORD in line for line in served.log)


def assert_said_once(served: LoggedServe) -> None:
    assert len(served.lines("unreachable")) == 1, served.log
    assert len(served.lines("reachable again after")) == 1, served.log
    assert not served.lines("Traceback"), "\n".join(served.log)
    assert len(served.lines("Event dropped")) <= 2, "not once per event: " + "\n".join(served.log)


async def test_a_database_out_past_the_wait_ends_the_stream_failed_with_a_sentence_and_leaves_nothing_working(
    serve_on: ServeOn, own_postgres: PostgresServer, http: httpx.AsyncClient, offline_model: OfflineModel
) -> None:
    served = await serve_on(3.0)
    async with asyncio.timeout(180):
        drill = await outage_drill(served, own_postgres, http, offline_model, marker("outage-fails"))

    last = drill.payloads[-1]["result"]["statusUpdate"]["status"]
    assert last["state"] == "TASK_STATE_FAILED", drill.payloads[-1]
    sentence = status_text(last)
    assert sentence.startswith("The agent's state database postgresql://postgres:***@127.0.0.1:"), sentence
    assert "for 3 s: this task's progress could not be saved" in sentence
    assert drill.task["status"]["state"] == "TASK_STATE_FAILED", drill.task
    assert status_text(drill.task["status"]) == sentence
    assert_refused_with_a_sentence(drill, served)
    assert_said_once(served)
    assert len(served.lines("its turn was aborted")) == 1, "the backend's turn stopped with the task"


async def test_a_database_back_within_the_wait_ends_the_stream_with_the_turns_real_status(
    serve_on: ServeOn, own_postgres: PostgresServer, http: httpx.AsyncClient, offline_model: OfflineModel
) -> None:
    served = await serve_on(60.0)
    async with asyncio.timeout(180):
        drill = await outage_drill(served, own_postgres, http, offline_model, marker("outage-waits"))

    assert "error" not in drill.payloads[-1], drill.payloads[-1]
    assert drill.payloads[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert drill.task["status"]["state"] == "TASK_STATE_COMPLETED", drill.task
    assert "word200" in task_answer(drill.task), "every word the turn made was kept"
    assert_refused_with_a_sentence(drill, served)
    assert_said_once(served)
