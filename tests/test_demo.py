"""`a2a-wrap demo`: the three-provider fleet behind its registry, on the offline model, as a user runs it: what it
prints, that the printed commands run from anywhere, and two demos on one machine."""

import asyncio
import re
import shlex
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest
from grpc.aio import insecure_channel

from tests.helpers.a2a_wire import send, task_answer
from tests.helpers.demo_process import A2A_WRAP, Demo, free_block
from tests.helpers.fleet_process import processes_under

pytestmark = [pytest.mark.slow, pytest.mark.alone]

DEMO_AGENTS = {"opencode-coder": "opencode", "copilot-coder": "copilot", "acp-reviewer": "acp"}
DEMO_PORTS = 1 + 2 * len(DEMO_AGENTS)  # the registry's, each agent's HTTP port, each agent's gRPC port


async def over_grpc(card: AgentCard, text: str) -> str:
    """The answer to one message sent by a2a-sdk's client over the card's gRPC interface."""
    config = ClientConfig(streaming=False, supported_protocol_bindings=["GRPC"], grpc_channel_factory=insecure_channel)
    request = SendMessageRequest(
        message=Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)])
    )
    async with ClientFactory(config).create(card) as client, asyncio.timeout(60):
        [answer] = [event async for event in client.send_message(request)]
    return "".join(part.text for artifact in answer.task.artifacts for part in artifact.parts)


async def listed(http: httpx.AsyncClient, demo: Demo) -> dict[str, dict[str, Any]]:
    response = await http.get(demo.registry + "/agents")
    return {agent["name"]: agent for agent in response.json()["agents"]}


async def run_printed(command: str, cwd: Path) -> str:
    """A command line as the demo printed it, run by a shell from another folder."""
    process = await asyncio.create_subprocess_shell(
        command, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    async with asyncio.timeout(60):
        output, _ = await process.communicate()
    assert process.returncode == 0, f"{command}\n{output.decode()}"
    return output.decode()


@pytest.mark.timeout(300)
async def test_the_demo_prints_each_agent_then_commands_that_run_from_anywhere(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    port = free_block(DEMO_PORTS)
    demo = await Demo.start(tmp_path, port)
    try:
        await demo.printed(r"^all 3 agents running \(registry at " + re.escape(demo.registry) + r"/agents\)$", 200)
        folder = tmp_path / "a2a-wrapper" / f"demo-{port}"
        for offset, name in enumerate(DEMO_AGENTS, start=1):
            line = await demo.printed(rf"^agent: +{name} ", 1)
            assert line.split()[2:] == [f"http://127.0.0.1:{port + offset}", "workspace", f"{folder}/{name}/workspace"]
            assert (folder / name / "workspace").is_dir()
            await demo.printed(rf"^ready: +{name} +pid \d+, \d+ s after the demo started$", 1)
        console = await demo.printed(r"^console: ", 1)
        assert console.split()[1] == f"{demo.registry}/console" and "one-time sign-in link" in console
        link = (await demo.printed(r"^console sign-in: ", 1)).split()[2]
        assert link.startswith(f"{demo.registry}/console/signin?token=")
        async with httpx.AsyncClient() as browser, httpx.AsyncClient() as another:
            assert (await browser.get(demo.registry + "/console/api/state")).status_code == 401
            assert (await browser.get(link)).status_code == 303
            assert (await browser.get(demo.registry + "/console/api/state")).json()["operator"] == "owner"
            assert (await another.get(link)).status_code == 401, "the link signs in once"
        stop = await demo.printed(r"^Ctrl-C stops everything", 1)
        assert demo.out.index(stop) == len(demo.out) - 1, "how to stop is the last line, under the commands"

        status = await demo.printed(r"^  .* status --registry ", 1)
        assert status.split()[0] == str(A2A_WRAP), "the venv's script, by its path: the venv is not activated"
        table = await run_printed(status, cwd=Path("/"))
        assert all(re.search(rf"^{name} +running +", table, re.M) for name in DEMO_AGENTS), table
        hello = await demo.printed(r'^  .* send http://\S+ "hello"$', 1)
        assert "Offline model reply: hello" in await run_printed(hello, cwd=Path("/"))

        agents = await listed(http, demo)
        assert {name: agent["backend"] for name, agent in agents.items()} == DEMO_AGENTS
        for offset, name in enumerate(DEMO_AGENTS, start=1):
            agent = agents[name]
            task = await send(http, agent["url"] + "/a2a/jsonrpc", f"hello {name}")
            assert task_answer(task) == f"Offline model reply: hello {name}"
            card = await A2ACardResolver(http, agent["url"]).get_agent_card()
            assert {i.protocol_binding for i in card.supported_interfaces} == {"JSONRPC", "HTTP+JSON", "GRPC"}
            grpc_urls = {i.url for i in card.supported_interfaces if i.protocol_binding == "GRPC"}
            assert grpc_urls == {f"127.0.0.1:{port + len(DEMO_AGENTS) + offset}"}, "its gRPC port, after the HTTP ones"
            assert await over_grpc(card, f"hello over gRPC {name}") == f"Offline model reply: hello over gRPC {name}"
    finally:
        code = await demo.stop()
    assert code == 0, demo.log()
    assert demo.out[-1] == "stopped: every agent and its backend"
    assert not any(link.split("token=")[1] in line for line in demo.err), "the link's secret is not in the log"
    assert processes_under(tmp_path) == [], "Ctrl-C leaves no agent and no backend behind"


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every config the demo wrote, with its bytes and modification time."""
    files = [folder / "fleet.yaml", *sorted(folder.glob("*/config.yaml"))]
    return {str(path): (path.read_bytes(), path.stat().st_mtime_ns) for path in files}


@pytest.mark.timeout(420)
async def test_two_demos_run_side_by_side_and_a_third_on_a_taken_folder_is_refused(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    first_port = free_block(DEMO_PORTS)
    second_port = free_block(DEMO_PORTS, avoid=range(first_port - DEMO_PORTS + 1, first_port + DEMO_PORTS))
    first = await Demo.start(tmp_path, first_port)
    second = await Demo.start(tmp_path, second_port)
    try:
        for demo in (first, second):
            await demo.printed(r"^all 3 agents running ", 300)
        folders = {demo: tmp_path / "a2a-wrapper" / f"demo-{demo.port}" for demo in (first, second)}
        for demo in (first, second):
            agents = await listed(http, demo)
            assert sorted(agents) == sorted(DEMO_AGENTS)
            assert sorted(agent["url"] for agent in agents.values()) == [
                f"http://127.0.0.1:{demo.port + offset}" for offset in (1, 2, 3)
            ], "each registry lists its own agents, on its own ports"
            assert all(Path(agent["config"]).is_relative_to(folders[demo]) for agent in agents.values())
            assert all(agent["state"] == "running" and agent["restarts"] == 0 for agent in agents.values())
        before = snapshot(folders[first])

        third_port = free_block(
            DEMO_PORTS,
            avoid=range(min(first_port, second_port) - DEMO_PORTS + 1, max(first_port, second_port) + DEMO_PORTS),
        )
        on_its_folder = await Demo.start(tmp_path, third_port, "--state-dir", str(folders[first]))
        on_its_port = await Demo.start(tmp_path, first_port)
        for refused in (on_its_folder, on_its_port):
            async with asyncio.timeout(30):
                assert await refused.process.wait() == 1
            await refused.stop()
            message = "\n".join(refused.err)
            assert f"another demo runs here: {folders[first]} is in use by pid {first.process.pid} (" in message
            assert "A second demo needs its own ports and folder: " in message, message
        suggested = re.search(r"`(.*)` \(its state goes to (\S+)\)", "\n".join(on_its_port.err))
        assert suggested is not None and shlex.split(suggested[1])[1:3] == ["demo", "--port"], on_its_port.err
        assert shlex.split(suggested[1])[0] == str(A2A_WRAP)

        assert snapshot(folders[first]) == before, "the refused demos wrote nothing in the first one's folder"
        agents = await listed(http, first)
        assert all(agent["state"] == "running" and agent["restarts"] == 0 for agent in agents.values())
    finally:
        codes = [await demo.stop() for demo in (first, second)]
    assert codes == [0, 0], first.log() + second.log()
    assert not any("address already in use" in line.lower() for line in first.err + second.err)
    assert processes_under(tmp_path) == []
