"""The operator endpoint: the fleet's console reads an agent's waiting approvals and answers them.

Real OpenCode on the offline model, a real HTTP client with the console's key: a `touch` the shield puts to a
person shows on the disk whether the answer let it run; the caller's side is watched with SubscribeToTask.
"""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import ShieldConfig
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import V1, approval_of, data_parts, final_state, stream
from tests.helpers.auth import bearer
from tests.helpers.tool_messages import bash_params

CONSOLE_KEY = "console-key-7d21c4"
TOUCH = "touch approved.txt"
ASKED, COMPLETED = "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"


@pytest.fixture
def console_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_WRAP_CONSOLE_KEY", CONSOLE_KEY)


@pytest.fixture
async def console() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60, headers=bearer(CONSOLE_KEY)) as client:
        yield client


@pytest.fixture
def settings(make_settings: SettingsFactory, console_key: None) -> AgentSettings:
    return make_settings(shield=ShieldConfig())  # every command asks


def operator(served: ServedAgent, path: str) -> str:
    return f"{served.url}/operator/v1{path}"


async def asked(http: httpx.AsyncClient, served: ServedAgent, command: str = TOUCH) -> tuple[dict[str, Any], str]:
    """The caller's bash call, ended in input-required: its task, and the approval it waits on."""
    events = await stream(http, served.jsonrpc, bash_params(command))
    assert final_state(events) == ASKED, events
    return events[0]["task"], approval_of(events)["id"]


class Subscription:
    """SubscribeToTask's events until the stream ends: what a caller watching the task sees."""

    def __init__(self, http: httpx.AsyncClient, served: ServedAgent, task_id: str) -> None:
        self._body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        self._http, self._url = http, served.jsonrpc
        self.open = asyncio.Event()
        self.events: list[dict[str, Any]] = []

    async def follow(self) -> list[dict[str, Any]]:
        async with self._http.stream("POST", self._url, json=self._body, headers=V1) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    self.events.append(json.loads(line[5:])["result"])
                    self.open.set()
        return self.events


async def answer(console: httpx.AsyncClient, served: ServedAgent, approval: str, **body: Any) -> httpx.Response:
    return await console.post(operator(served, f"/approvals/{approval}"), json=body)


@pytest.mark.slow
async def test_the_console_sees_the_waiting_approval_and_its_allow_runs_the_command(
    settings: AgentSettings, offline_model: OfflineModel, http: httpx.AsyncClient, console: httpx.AsyncClient
) -> None:
    async with asyncio.timeout(120), serving(settings, offline_model) as served:
        task, approval = await asked(http, served)
        state = (await console.get(operator(served, "/state"))).json()
        assert state["agent"] == "test-agent" and state["approvers"] == ["caller", "console"]
        [waiting] = state["approvals"]
        assert waiting["id"] == approval and waiting["type"] == "approval" and waiting["taskId"] == task["id"]
        assert waiting["tool"]["command"] == TOUCH and waiting["class"] == "execute" and waiting["rule"]
        assert [option["id"] for option in waiting["options"]] == ["allow_once", "allow_context", "deny"]
        [live] = state["tasks"]
        assert live["taskId"] == task["id"] and live["state"] == "input-required"

        watching = Subscription(http, served, task["id"])
        followed = asyncio.create_task(watching.follow())
        await watching.open.wait()
        decided = await answer(console, served, approval, option="allow_once", operator="alice")
        assert decided.status_code == 200, decided.text
        assert decided.json() == {"id": approval, "option": "allow_once", "decidedBy": "console:alice"}

        events = await followed
        assert final_state(events) == COMPLETED
        [permission] = data_parts(events, "permission")
        assert permission["decision"] == "allow" and permission["command"] == TOUCH
        assert (served.workdir / "approved.txt").exists()

        again = await answer(console, served, approval, option="deny", operator="bob")
        assert again.status_code == 409
        assert again.json()["error"] == f"Approval {approval} was already answered by console:alice (allow_once)."
        state = (await console.get(operator(served, "/state"))).json()
        assert state["approvals"] == [] and state["tasks"] == []
