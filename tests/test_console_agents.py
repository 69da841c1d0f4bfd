"""The console against real agents in other processes: an `a2a-wrap serve` agent, listed by URL with its console
key by a registry in another process, its approvals seen in the console's state and event stream and answered
there by a signed-in operator; and `a2a-wrap fleet` keying the agents it runs itself.

What is asserted is what the people involved see: the operator, the console's state and stream; the caller, its
task's stream to the end; and the workspace on disk, where the allowed command ran and a refused one did not.
"""

import asyncio
import contextlib
import json
import secrets
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.config.settings import AgentSettings
from tests.conftest import SettingsFactory
from tests.helpers.a2a_wire import V1, approval_of, stream
from tests.helpers.fleet_process import FleetProcess, agent_config, port_of, wait_until
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

ASKING_SHIELD = {"defaults": {"read": "allow"}}  # shell commands are put to a person
OPERATOR, OPERATOR_KEY_ENV = "alice", "CONSOLE_TEST_ALICE_KEY"
AGENT_KEY_ENV = "CONSOLE_TEST_AGENT_KEY"
State = dict[str, Any]


async def signed_in(console: httpx.AsyncClient, key: str) -> str:
    """The operator signed in; the page's CSRF token."""
    response = await console.post("/console/login", data={"name": OPERATOR, "key": key})
    assert response.status_code == 303, response.text
    page = (await console.get("/console")).text
    return page.split('name="csrf-token" content="')[1].split('"')[0]


async def until_state(console: httpx.AsyncClient, check: Callable[[State], bool], timeout: float = 30) -> State:
    """/console/api/state once `check` holds."""
    state: State = {}
    try:
        async with asyncio.timeout(timeout):
            while not check(state):
                await asyncio.sleep(0.2)
                state = (await console.get("/console/api/state")).json()
    except TimeoutError:
        raise AssertionError(f"the console never showed it: {state}") from None
    return state


def waiting(name: str, approval_id: str) -> Callable[[State], bool]:
    def check(state: State) -> bool:
        agent = next((a for a in state.get("agents", []) if a["name"] == name), {})
        return any(approval["id"] == approval_id for approval in agent.get("approvals", []))

    return check


@contextlib.asynccontextmanager
async def console_stream(console: httpx.AsyncClient) -> AsyncIterator[list[State]]:
    """The console's event stream read in the background: every state it sent so far."""
    states: list[State] = []

    async def read() -> None:
        async with console.stream("GET", "/console/api/events") as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    states.append(json.loads(line[5:]))

    reading = asyncio.create_task(read())
    try:
        yield states
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading


async def subscribed(http: httpx.AsyncClient, jsonrpc: str, task_id: str) -> list[str]:
    """The task's states as its caller, subscribed to it, sees them until the stream ends."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    states = []
    async with http.stream("POST", jsonrpc, json=body, headers=V1) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                result = json.loads(line[5:])["result"]
                if "statusUpdate" in result:
                    states.append(result["statusUpdate"]["status"]["state"])
    return states


async def asked(http: httpx.AsyncClient, jsonrpc: str, command: str) -> State:
    """The caller's bash call, ended in input-required: the approval it waits on, with its task id."""
    events = await stream(http, jsonrpc, bash_params(command))
    return {**approval_of(events), "taskId": events[0]["task"]["id"]}


def remote_fleet_file(folder: Path, agent_url: str) -> Path:
    path = folder / "fleet.yaml"
    fleet = {
        "registry": {"operators": [{"name": OPERATOR, "key_env": OPERATOR_KEY_ENV}], "health_interval": 0.5},
        "agents": [{"url": agent_url, "name": "remote", "console_key_env": AGENT_KEY_ENV}],
    }
    path.write_text(yaml.safe_dump(fleet))
    return path


async def test_a_remote_agents_approval_is_answered_by_a_signed_in_operator(
    tmp_path: Path, make_settings: SettingsFactory, http: httpx.AsyncClient
) -> None:
    settings: AgentSettings = make_settings()
    config = agent_config(tmp_path / "agents", "remote", settings, auto_approve=False, shield=ASKING_SHIELD)
    agent_key, operator_key = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    port = port_of(config)
    agent_url, jsonrpc, workspace = (
        f"http://127.0.0.1:{port}",
        f"http://127.0.0.1:{port}/a2a/jsonrpc",
        config.parent / "workspace",
    )
    agent = await FleetProcess.start(
        "serve", "--config", str(config), port=port, env_extra={"A2A_WRAP_CONSOLE_KEY": agent_key}
    )
    registry = await FleetProcess.start(
        "fleet",
        str(remote_fleet_file(tmp_path, agent_url)),
        env_extra={OPERATOR_KEY_ENV: operator_key, AGENT_KEY_ENV: agent_key},
    )
    try:
        await wait_until(http, registry, lambda listed: listed.get("remote", {}).get("state") == "running")
        async with httpx.AsyncClient(base_url=registry.registry, timeout=30) as console:
            wrong = await console.post("/console/login", data={"name": OPERATOR, "key": "a guess"})
            assert wrong.status_code == 401 and "are not an operator" in wrong.text
            token = await signed_in(console, operator_key)

            async with console_stream(console) as streamed:
                approval = await asked(http, jsonrpc, "touch allowed.txt")
                state = await until_state(console, waiting("remote", approval["id"]))
                shown = next(a for a in state["agents"][0]["approvals"] if a["id"] == approval["id"])
                assert shown["tool"]["command"] == "touch allowed.txt" and shown["rule"] == approval["rule"]
                assert shown["taskId"] == approval["taskId"] and state["agents"][0]["console"] == "ok"
                assert [t["state"] for t in state["agents"][0]["tasks"]] == ["input-required"]
                await until_state(console, lambda _: any(waiting("remote", approval["id"])(s) for s in streamed))

                path = f"/console/api/approvals/remote/{approval['id']}"
                refused = await console.post(path, json={"option": "allow_once"})
                assert refused.status_code == 403 and "CSRF" in refused.json()["error"]
                await asyncio.sleep(1)
                assert not (workspace / "allowed.txt").exists(), "a refused action ran nothing"

                watching = asyncio.create_task(subscribed(http, jsonrpc, approval["taskId"]))
                decided = await console.post(path, json={"option": "allow_once"}, headers={"x-csrf-token": token})
                assert decided.status_code == 200, decided.text
                assert decided.json() == {"id": approval["id"], "option": "allow_once", "decidedBy": "console:alice"}
                async with asyncio.timeout(60):
                    assert (await watching)[-1] == "TASK_STATE_COMPLETED"
                assert (workspace / "allowed.txt").exists(), "the allowed command ran in the agent's workspace"
                await until_state(console, lambda s: bool(s) and s["agents"][0]["approvals"] == [])

                again = await console.post(path, json={"option": "deny"}, headers={"x-csrf-token": token})
                assert again.status_code == 409 and again.json()["error"], again.text

            audit = (await console.get("/console/api/audit", params={"decision": "allow", "agent": "remote"})).json()
            assert audit["errors"] == []
            entry = next(e for e in audit["entries"] if e["decidedBy"] == "console:alice")
            assert (entry["agent"], entry["decision"]) == ("remote", "allow") and "allowed.txt" in entry["target"]
    finally:
        assert await registry.stop() == 0, registry.log()
        assert await agent.stop() == 0, agent.log()


async def test_without_operators_loopback_cannot_answer_and_the_printed_link_signs_in_once(
    tmp_path: Path, make_settings: SettingsFactory, http: httpx.AsyncClient
) -> None:
    """The fleet keys the agents it runs; with no operators, a request from this machine without a session is
    refused (the approval stays waiting, the command unrun), and the link the fleet printed signs in once."""
    config = agent_config(tmp_path / "agents", "kept", make_settings(), auto_approve=False, shield=ASKING_SHIELD)
    jsonrpc, workspace = f"http://127.0.0.1:{port_of(config)}/a2a/jsonrpc", config.parent / "workspace"
    fleet = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    try:
        await fleet.wait_for_line(r"console at http://127\.0\.0\.1:\d+/console: no operators in the fleet file")
        printed = await fleet.wait_for_line(r"^console sign-in: ", printed=True)
        link = printed.split()[2]
        assert link.startswith(fleet.registry + "/console/signin?token=")
        assert not any(link.split("token=")[1] in line for line in fleet.lines), "the link's secret is not logged"
        await wait_until(http, fleet, lambda listed: listed.get("kept", {}).get("state") == "running")
        approval = await asked(http, jsonrpc, "touch refused.txt")
        path = f"/console/api/approvals/kept/{approval['id']}"

        async with httpx.AsyncClient(base_url=fleet.registry, timeout=30) as anonymous:  # from 127.0.0.1
            page = await anonymous.get("/console")
            assert "one-time link the fleet printed" in page.text and 'name="csrf-token"' not in page.text
            assert (await anonymous.get("/console/api/state")).status_code == 401
            same_site = {"origin": fleet.registry, "sec-fetch-site": "same-origin", "x-csrf-token": "guess"}
            for headers in ({}, same_site):
                refused = await anonymous.post(path, json={"option": "allow_once"}, headers=headers)
                assert refused.status_code == 401, refused.text
            await asyncio.sleep(1)
            assert not (workspace / "refused.txt").exists(), "a refused answer ran nothing"

        async with httpx.AsyncClient(timeout=30) as owner:
            signed = await owner.get(link)
            assert signed.status_code == 303, signed.text
            owner.base_url = httpx.URL(fleet.registry)
            page = (await owner.get("/console")).text
            assert "Signed in as owner" in page
            token = page.split('name="csrf-token" content="')[1].split('"')[0]
            state = await until_state(owner, waiting("kept", approval["id"]))  # still waiting: nobody answered it
            assert state["operator"] == "owner" and state["agents"][0]["approvers"] == ["caller", "console"]

            async with httpx.AsyncClient(timeout=30) as second:
                again = await second.get(link)
                assert again.status_code == 401 and "it was used already" in again.text
                assert "set-cookie" not in again.headers

            watching = asyncio.create_task(subscribed(http, jsonrpc, approval["taskId"]))
            decided = await owner.post(path, json={"option": "deny"}, headers={"x-csrf-token": token})
            assert decided.json() == {"id": approval["id"], "option": "deny", "decidedBy": "console:owner"}
            async with asyncio.timeout(60):
                assert (await watching)[-1] in {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}
            assert not (workspace / "refused.txt").exists(), "the denied command never ran"

            audit = (await owner.get("/console/api/audit", params={"decision": "deny"})).json()
            assert [(e["agent"], e["decidedBy"]) for e in audit["entries"]][:1] == [("kept", "console:owner")]

        fleet.process.send_signal(signal.SIGUSR1)  # another link, printed where the first was
        another = await fleet.wait_for_line(
            r"^console sign-in: .*token=(?!" + link.split("token=")[1] + ")", printed=True
        )
        async with httpx.AsyncClient(timeout=30) as third:
            assert (await third.get(another.split()[2])).status_code == 303
    finally:
        assert await fleet.stop() == 0, fleet.log()
