"""Drills: `a2a-wrap serve` on SQLite killed with SIGKILL at the moments a write behind the turn could take back
what a client was told: just after the event that gave it the task's id, and just after the task's final event.
After a restart the task is there, in the state the client saw or failed with a sentence; never missing, never
`working`; and the same message sent again is answered with that task, not run as a new one.

Real processes (tests/helpers/serve_process.py), real OpenCode on the offline model, a real kill.
"""

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.state.recovery import INTERRUPTED, lost_with
from tests.conftest import SettingsFactory
from tests.helpers.a2a_wire import V1, rpc, status_text, user_message
from tests.helpers.serve_process import serve_config, start_serve, wait_healthy

pytestmark = pytest.mark.slow

ROUNDS = 3  # kills per moment: the moment is the first millisecond after the event, each time


class Agent:
    """One agent's config and state folder, served by a process that a drill kills and starts again."""

    def __init__(self, config: Path, url: str, http: httpx.AsyncClient) -> None:
        self.config, self.url, self.jsonrpc, self._http = config, url, url + "/a2a/jsonrpc", http
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process = await start_serve(self.config)
        await wait_healthy(self._http, self.url)

    async def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(30):
                await self.process.wait()

    async def task(self, task_id: str) -> dict[str, Any]:
        answer = await rpc(self._http, self.jsonrpc, "GetTask", {"id": task_id})
        assert "result" in answer, f"the task {task_id} the client was told of: {answer}"
        return dict(answer["result"])


@pytest.fixture(params=["sqlite", "postgres"])
async def agent(
    tmp_path: Path, make_settings: SettingsFactory, http: httpx.AsyncClient, request: pytest.FixtureRequest
) -> AsyncIterator[Agent]:
    """The agent, its state in its SQLite file or on PostgreSQL (a replica of a fixed name: the one started again
    after the kill is the same replica, and fails what its last run left as it starts)."""
    settings = make_settings(state_dir=tmp_path / "state")
    extra: dict[str, Any] = {"auto_approve": True}
    if request.param == "postgres":
        extra["state"] = {"url": request.getfixturevalue("postgres_url"), "replica": "drilled"}
    config = tmp_path / "agent.yaml"
    config.write_text(yaml.safe_dump(serve_config(settings, "drilled", tmp_path / "state", **extra)))
    drilled = Agent(config, settings.advertised_url, http)
    try:
        yield drilled
    finally:
        await drilled.stop()


async def kill_after(agent: Agent, http: httpx.AsyncClient, message: dict[str, Any], final: bool) -> dict[str, Any]:
    """Streams `message` and kills the agent as soon as the stream's first event (`final` False) or its final
    status (`final` True) is read; returns that event's task or status update."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}}
    async with http.stream("POST", agent.jsonrpc, json=body, headers=V1) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            result = json.loads(line[5:])["result"]
            seen = result.get("task") or result.get("statusUpdate")
            if seen is not None and (not final or seen["status"]["state"] == "TASK_STATE_COMPLETED"):
                await agent.kill()
                return dict(seen)
    raise AssertionError("the stream ended before the moment to kill")


async def test_a_task_id_a_client_was_given_survives_a_kill_right_after(agent: Agent, http: httpx.AsyncClient) -> None:
    told = []
    for round_ in range(ROUNDS):
        await agent.start()
        message = user_message(f"[[long:30]] [[slow:0.5]] drill {round_}", f"ctx-first-{round_}")
        told.append((message, (await kill_after(agent, http, message, final=False))["id"]))
    await agent.start()
    for message, task_id in told:
        task = await agent.task(task_id)
        assert task["status"]["state"] == "TASK_STATE_FAILED", task["status"]  # its turn died with the process
        assert status_text(task["status"]) in (INTERRUPTED, lost_with("drilled")), task["status"]
        again = await rpc(http, agent.jsonrpc, "SendMessage", {"message": message})
        assert again["result"]["task"]["id"] == task_id, "the message's claim was kept with its task"


async def test_a_final_state_a_client_saw_survives_a_kill_right_after(agent: Agent, http: httpx.AsyncClient) -> None:
    told = []
    for round_ in range(ROUNDS):
        await agent.start()
        seen = await kill_after(agent, http, user_message(f"drill {round_}", f"ctx-final-{round_}"), final=True)
        told.append(seen.get("taskId") or seen["id"])
    await agent.start()
    for task_id in told:
        assert (await agent.task(task_id))["status"]["state"] == "TASK_STATE_COMPLETED"
