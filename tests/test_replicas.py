"""Two `a2a-wrap serve` replicas of one agent on one PostgreSQL: a task is one task whichever replica is asked, and
a context runs on one replica at a time (a lease), until the replica holding it dies and the lease runs out."""

import asyncio
import json
import signal
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.state.recovery import INTERRUPTED
from tests.conftest import SettingsFactory
from tests.helpers.a2a_wire import final_state, rpc, status_text, stream, subscription, user_message
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.serve_process import serve_config, start_serve, wait_healthy

LEASE = 3.0  # seconds: short, so a dead replica's contexts are free within the test


@dataclass
class Replica:
    name: str
    url: str
    process: asyncio.subprocess.Process

    @property
    def jsonrpc(self) -> str:
        return self.url + "/a2a/jsonrpc"


@pytest.fixture
async def replicas(
    tmp_path: Path, make_settings: SettingsFactory, postgres_url: str, http: httpx.AsyncClient
) -> AsyncIterator[tuple[Replica, Replica]]:
    started: list[Replica] = []
    try:
        for name in ("a", "b"):
            settings = make_settings(state_dir=tmp_path / name)
            state = {"url": postgres_url, "lease": LEASE, "replica": name}
            config = serve_config(settings, "replicated", tmp_path / name, auto_approve=True, state=state)
            path = tmp_path / f"{name}.yaml"
            path.write_text(yaml.safe_dump(config))
            started.append(Replica(name, settings.advertised_url, await start_serve(path)))
        for replica in started:
            await wait_healthy(http, replica.url)
        yield started[0], started[1]
    finally:
        for replica in started:
            if replica.process.returncode is None:
                replica.process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(30):
                await replica.process.wait()


async def start_task(http: httpx.AsyncClient, replica: Replica, text: str, context_id: str | None = None) -> str:
    params = {"message": user_message(text, context_id), "configuration": {"returnImmediately": True}}
    answer = await rpc(http, replica.jsonrpc, "SendMessage", params)
    assert "result" in answer, answer
    return str(answer["result"]["task"]["id"])


async def subscribe(http: httpx.AsyncClient, replica: Replica, task_id: str) -> list[dict[str, Any]]:
    return await subscription(http, replica.jsonrpc, task_id)


async def task_of(http: httpx.AsyncClient, replica: Replica, task_id: str) -> dict[str, Any]:
    answer = await rpc(http, replica.jsonrpc, "GetTask", {"id": task_id})
    assert "result" in answer, answer
    return dict(answer["result"])


def states(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        status = event.get("statusUpdate", event.get("task", {})).get("status")
        if status:
            found.append(status["state"])
    return found


@pytest.mark.slow
async def test_a_task_run_on_one_replica_is_read_listed_and_followed_on_the_other_which_never_runs_its_context(
    replicas: tuple[Replica, Replica], http: httpx.AsyncClient, offline_model: OfflineModel
) -> None:
    a, b = replicas
    first, second = marker("first"), marker("second")
    context_id = str(uuid.uuid4())
    async with asyncio.timeout(120):
        task_id = await start_task(http, a, f"[[slow:8]] {first}", context_id)
        await wait_until_the_model_receives(offline_model, first)

        assert (await task_of(http, b, task_id))["status"]["state"] == "TASK_STATE_WORKING"
        listed = await rpc(http, b.jsonrpc, "ListTasks", {"contextId": context_id})
        assert [task["id"] for task in listed["result"]["tasks"]] == [task_id]
        followed = asyncio.create_task(subscribe(http, b, task_id))

        refused = await stream(http, b.jsonrpc, {"message": user_message(f"hello {second}", context_id)})
        assert final_state(refused) == "TASK_STATE_FAILED"
        sentence = status_text(refused[-1]["statusUpdate"]["status"])
        assert f"running on replica a ({a.url})" in sentence and "lease on it ends in" in sentence

        events = await followed
        assert states(events)[-1] == "TASK_STATE_COMPLETED"
        assert (await task_of(http, b, task_id))["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not any(second in json.dumps(request) for request in offline_model.control.requests()), (
        "the refused message reached no backend"
    )


@pytest.mark.slow
async def test_a_task_running_on_one_replica_is_cancelled_from_the_other(
    replicas: tuple[Replica, Replica], http: httpx.AsyncClient, offline_model: OfflineModel
) -> None:
    a, b = replicas
    words = marker("cancel-me")
    async with asyncio.timeout(120):
        task_id = await start_task(http, a, f"[[slow:30]] {words}")
        await wait_until_the_model_receives(offline_model, words)
        canceled = await rpc(http, b.jsonrpc, "CancelTask", {"id": task_id})
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED", canceled
        while (await task_of(http, a, task_id))["status"]["state"] != "TASK_STATE_CANCELED":  # noqa: ASYNC110
            await asyncio.sleep(0.2)  # A sees the cancel on its next write
    assert (await task_of(http, b, task_id))["status"]["state"] == "TASK_STATE_CANCELED"


@pytest.mark.slow
async def test_a_context_of_a_replica_that_died_resumes_on_the_other_after_the_lease(
    replicas: tuple[Replica, Replica], http: httpx.AsyncClient, offline_model: OfflineModel
) -> None:
    a, b = replicas
    words, again = marker("dies"), marker("again")
    context_id = str(uuid.uuid4())
    async with asyncio.timeout(120):
        lost = await start_task(http, a, f"[[slow:60]] {words}", context_id)
        await wait_until_the_model_receives(offline_model, words)
        a.process.send_signal(signal.SIGKILL)
        await a.process.wait()

        early = await stream(http, b.jsonrpc, {"message": user_message("too soon", context_id)})
        assert "running on replica a" in status_text(early[-1]["statusUpdate"]["status"])
        await asyncio.sleep(LEASE)
        resumed = await stream(http, b.jsonrpc, {"message": user_message(f"hello {again}", context_id)})
        assert final_state(resumed) == "TASK_STATE_COMPLETED"
        assert resumed[-1]["statusUpdate"]["metadata"]["a2a-wrapper"]["sessionRecreated"] is True
        left = await task_of(http, b, lost)
    assert left["status"]["state"] == "TASK_STATE_FAILED"
    assert status_text(left["status"]) == INTERRUPTED
