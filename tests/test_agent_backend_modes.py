"""System prompt modes, attaching to a running OpenCode, listing and subscribing to tasks."""

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.agent import running_agent
from a2a_wrapper.backends.opencode import launch
from a2a_wrapper.errors import BackendUnavailable
from a2a_wrapper.process import ChildProcess
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import V1, answer_text, rpc, send, stream, task_answer, user_message
from tests.helpers.serve_process import start_serve, wait_healthy

pytestmark = pytest.mark.slow


async def test_system_prompt_appended(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    settings = make_settings(backend={"system_prompt": "APPENDED-RULES: review only."})
    async with serving(settings, offline_model) as served:
        await http.delete(offline_model.url + "/control/requests")
        task = await send(http, served.jsonrpc, "hi")
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        requests = (await http.get(offline_model.url + "/control/requests")).json()
        system = "".join(str(m.get("content")) for m in requests[-1]["messages"] if m["role"] == "system")
        assert "APPENDED-RULES: review only." in system
        assert len(system) > 2000, "appending keeps OpenCode's own system prompt"


async def test_system_prompt_replaced_through_a_custom_agent(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    settings = make_settings(
        backend={"system_prompt": "REPLACED-PROMPT: you review code.", "system_prompt_mode": "replace"}
    )
    async with serving(settings, offline_model) as served:
        events = await stream(http, served.jsonrpc, {"message": user_message("[[echo-system]]")})
        assert answer_text(events).startswith("System prompt starts: REPLACED-PROMPT: you review code.")


@asynccontextmanager
async def external_opencode(make_settings: SettingsFactory, binary: Path, state: Path) -> AsyncIterator[dict[str, Any]]:
    """An `opencode serve` the user runs themselves: its URL, password and workdir."""
    external = make_settings(state_dir=state)
    plan = launch.prepare(binary, external.backend, state, dict(os.environ))
    (Path(plan.env["XDG_CONFIG_HOME"]) / "opencode" / "plugin" / launch.HOOK_PLUGIN).unlink()  # theirs: no hook
    external.backend.workdir.mkdir(parents=True)
    child = ChildProcess("external-opencode", plan.argv, plan.env, external.backend.workdir)
    await child.start(launch.READY_LINE)
    try:
        url = (await child.wait_ready(60)).group(1)
        yield {"base_url": url, "password": plan.password, "workdir": external.backend.workdir, "child": child}
    finally:
        await child.stop()


async def test_attach_to_a_running_opencode(
    make_settings: SettingsFactory, offline_model: Any, opencode_binary: Path, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    async with external_opencode(make_settings, opencode_binary, tmp_path / "external") as external:
        child = external.pop("child")
        async with serving(make_settings(backend=external), offline_model) as served:
            health = (await http.get(served.url + "/health")).json()
            assert health["backend"]["healthy"] is True and "pid" not in health["backend"]
            task = await send(http, served.jsonrpc, "attached")
            assert task_answer(task) == "Offline model reply: attached"
        assert child.running, "an attached backend belongs to the user: it is not stopped"


async def test_wrong_password_for_an_attached_backend_is_a_clear_error(
    make_settings: SettingsFactory, opencode_binary: Path, tmp_path: Path
) -> None:
    async with external_opencode(make_settings, opencode_binary, tmp_path / "external") as external:
        settings = make_settings(backend={"base_url": external["base_url"], "password": "wrong"})
        with pytest.raises(BackendUnavailable, match="401"):
            async with running_agent(settings):
                pass


async def test_list_and_subscribe(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    first = await send(http, agent.jsonrpc, "listed")
    listed = await rpc(http, agent.jsonrpc, "ListTasks", {"contextId": first["contextId"]})
    assert [t["id"] for t in listed["result"]["tasks"]] == [first["id"]]
    rest = await http.get(agent.rest + "/tasks", params={"contextId": first["contextId"]}, headers=V1)
    assert rest.status_code == 200 and rest.json()["tasks"][0]["id"] == first["id"]

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": user_message("[[long:30]] [[slow:3]]")},
    }
    async with http.stream("POST", agent.jsonrpc, json=body, headers=V1) as response:
        lines = response.aiter_lines()
        async for line in lines:
            if line.startswith("data:"):
                task_id = json.loads(line[5:])["result"]["task"]["id"]
                break
        subscribed: list[dict[str, Any]] = []
        sub_body = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}
        async with asyncio.timeout(30), http.stream("POST", agent.jsonrpc, json=sub_body, headers=V1) as sub:
            async for line in sub.aiter_lines():
                if line.startswith("data:"):
                    subscribed.append(json.loads(line[5:])["result"])
        async for _ in lines:
            pass
    states = [e["statusUpdate"]["status"]["state"] for e in subscribed if "statusUpdate" in e]
    assert states[-1] == "TASK_STATE_COMPLETED"
    assert any("artifactUpdate" in e for e in subscribed)


async def test_a_restart_rejects_what_an_attached_opencode_still_waits_for(
    make_settings: SettingsFactory, offline_model: Any, opencode_binary: Path, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    async with external_opencode(make_settings, opencode_binary, tmp_path / "external") as external:
        auth = httpx.BasicAuth("opencode", external["password"])
        port = make_settings().server.port
        config = tmp_path / "attached.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "card": {"name": "attached"},
                    "server": {"port": port},
                    "backend": {
                        "kind": "opencode",
                        "base_url": external["base_url"],
                        "password": external["password"],
                        "workdir": str(external["workdir"]),
                    },
                    "shield": {},
                    "state_dir": str(tmp_path / "wrapper-state"),
                }
            )
        )
        url = f"http://127.0.0.1:{port}"
        wrapper = await start_serve(config)
        await wait_healthy(http, url)
        command = json.dumps({"command": "touch never.txt"})
        events = await stream(http, url + "/a2a/jsonrpc", {"message": user_message(f"[[tool:bash {command}]]")})
        assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        wrapper.kill()  # no chance to answer: the attached OpenCode keeps waiting
        await wrapper.wait()
        assert len((await http.get(external["base_url"] + "/permission", auth=auth)).json()) == 1
        wrapper = await start_serve(config)
        try:
            await wait_healthy(http, url)
            assert (await http.get(external["base_url"] + "/permission", auth=auth)).json() == []
        finally:
            wrapper.terminate()
            await wrapper.wait()
        assert not (external["workdir"] / "never.txt").exists()
