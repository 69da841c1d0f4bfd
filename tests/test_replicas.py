"""Two `a2a-wrap serve` replicas of one agent on one PostgreSQL: a task is one task whichever replica is asked, and
a context runs on one replica at a time (a lease), until the replica holding it dies and the lease runs out."""

import asyncio
import json
import signal
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.state.recovery import INTERRUPTED, lost_with
from tests.conftest import SettingsFactory
from tests.helpers.a2a_wire import final_state, rpc, status_text, stream, subscription, user_message
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.serve_process import serve_config, start_serve, wait_healthy

LEASE = 3.0  # seconds: short, so a dead replica's contexts are free within the test
SWEPT_WITHIN = LEASE + LEASE / 3 + 2.0  # its lease runs out, the next sweep (every third of it), a margin for load


@dataclass
class Replica:
    name: str
    url: str
    process: asyncio.subprocess.Process

    @property
    def jsonrpc(self) -> str:
        return self.url + "/a2a/jsonrpc"


def replica_config(
    tmp_path: Path, make_settings: SettingsFactory, postgres_url: str, name: str, lease: float = LEASE
) -> tuple[Path, str]:
    """The config file of replica `name` (its name fixed: `state.replica`), and its URL."""
    settings = make_settings(state_dir=tmp_path / name)
    state = {"url": postgres_url, "lease": lease, "replica": name}
    config = serve_config(settings, "replicated", tmp_path / name, auto_approve=True, state=state)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, settings.advertised_url


async def stop(replicas: list[Replica]) -> None:
    for replica in replicas:
        if replica.process.returncode is None:
            replica.process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            await replica.process.wait()


@pytest.fixture
async def replicas(
    tmp_path: Path, make_settings: SettingsFactory, postgres_url: str, http: httpx.AsyncClient
) -> AsyncIterator[tuple[Replica, Replica]]:
    started: list[Replica] = []
    try:
        for name in ("a", "b"):
            path, url = replica_config(tmp_path, make_settings, postgres_url, name)
            started.append(Replica(name, url, await start_serve(path)))
        for replica in started:
            await wait_healthy(http, replica.url)
        yield started[0], started[1]
    finally:
        await stop(started)


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
    assert status_text(left["status"]) == lost_with("a")


@pytest.mark.slow
async def test_a_task_of_a_replica_killed_mid_turn_is_failed_by_the_other_within_the_lease_untouched(
    replicas: tuple[Replica, Replica], http: httpx.AsyncClient, offline_model: OfflineModel
) -> None:
    """Nobody sends to the context again: the live replica's sweep fails the task, and its subscriber there sees
    the end."""
    a, b = replicas
    words = marker("orphan")
    async with asyncio.timeout(120):
        task_id = await start_task(http, a, f"[[slow:60]] {words}")
        await wait_until_the_model_receives(offline_model, words)
        followed = asyncio.create_task(subscribe(http, b, task_id))
        a.process.send_signal(signal.SIGKILL)
        await a.process.wait()
        killed = time.monotonic()
        assert (await task_of(http, b, task_id))["status"]["state"] == "TASK_STATE_WORKING", "its lease still runs"
        while (left := await task_of(http, b, task_id))["status"]["state"] == "TASK_STATE_WORKING":  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        swept = time.monotonic() - killed
        events = await followed
    print(f"orphan failed {swept:.2f} s after the kill (lease {LEASE:g} s)")
    assert left["status"]["state"] == "TASK_STATE_FAILED"
    assert status_text(left["status"]) == lost_with("a")
    assert swept <= SWEPT_WITHIN, f"failed {swept:.1f} s after the kill; the lease is {LEASE:g} s"
    assert states(events)[-1] == "TASK_STATE_FAILED"


@pytest.mark.slow
async def test_a_replica_restarted_under_its_fixed_name_fails_what_its_last_run_left(
    tmp_path: Path,
    make_settings: SettingsFactory,
    postgres_url: str,
    http: httpx.AsyncClient,
    offline_model: OfflineModel,
) -> None:
    """`state.replica: a`, killed mid-turn and started again well within its lease: the leases in its name are its
    last run's, so the task is failed at the start, and the context runs again there at once."""
    path, url = replica_config(tmp_path, make_settings, postgres_url, "a", lease=120.0)
    words = marker("restarted")
    context_id = str(uuid.uuid4())
    started = [Replica("a", url, await start_serve(path))]
    try:
        async with asyncio.timeout(120):
            await wait_healthy(http, url)
            task_id = await start_task(http, started[0], f"[[slow:60]] {words}", context_id)
            await wait_until_the_model_receives(offline_model, words)
            started[0].process.send_signal(signal.SIGKILL)
            await started[0].process.wait()
            started.append(Replica("a", url, await start_serve(path)))
            await wait_healthy(http, url)
            left = await task_of(http, started[1], task_id)
            assert left["status"]["state"] == "TASK_STATE_FAILED"
            assert status_text(left["status"]) == INTERRUPTED
            again = await stream(http, started[1].jsonrpc, {"message": user_message("hello again", context_id)})
            assert final_state(again) == "TASK_STATE_COMPLETED"
    finally:
        await stop(started)
