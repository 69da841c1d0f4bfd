"""The registry as orchestrators and users see it: GET /agents, ?skill=, one agent, cards, `status`, remote agents."""

import asyncio
import signal
import sys
from pathlib import Path

import httpx
import pytest

from a2a_wrapper.backends.opencode.launch import free_port
from tests.conftest import SettingsFactory
from tests.helpers.fleet_process import FleetProcess, agent_config, agents, processes_under, running, wait_until

pytestmark = pytest.mark.slow


async def a2a_wrap(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "a2a_wrapper", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(60):
        out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


REVIEW = {"skills": [{"id": "code-review", "name": "Code review", "tags": ["review", "security"]}]}
DOCS = {"skills": [{"id": "docs-writing", "name": "Docs", "tags": ["docs"]}]}


async def test_the_registry_lists_filters_and_describes_the_fleet(
    make_settings: SettingsFactory, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    settings = make_settings()
    agent_config(tmp_path / "agents", "reviewer", settings, card=REVIEW)
    agent_config(tmp_path / "agents", "writer", settings, card=DOCS)
    fleet = await FleetProcess.start("fleet", str(tmp_path / "agents"))
    try:
        listed = await wait_until(http, fleet, running("reviewer", "writer"))
        reviewer = listed["reviewer"]
        assert reviewer["skills"] == [{"id": "code-review", "name": "Code review", "tags": ["review", "security"]}]
        assert (reviewer["backend"], reviewer["model"], reviewer["restarts"]) == ("opencode", settings.backend.model, 0)
        assert reviewer["last_health"]["healthy"] is True and reviewer["last_health"]["backend"]["kind"] == "opencode"
        card = (await http.get(reviewer["card_url"])).json()  # what an orchestrator does next
        assert card["name"] == "reviewer" and card["supportedInterfaces"][0]["url"].startswith(reviewer["url"])

        assert list(await agents(http, fleet.registry, "?skill=review")) == ["reviewer"]
        assert list(await agents(http, fleet.registry, "?skill=docs-writing")) == ["writer"]
        assert await agents(http, fleet.registry, "?skill=translation") == {}
        assert (await http.get(fleet.registry + "/agents/writer")).json()["skills"][0]["id"] == "docs-writing"
        missing = await http.get(fleet.registry + "/agents/nobody")
        assert missing.status_code == 404
        assert missing.json() == {"error": "no agent named 'nobody' in this registry; known: reviewer, writer"}
        assert (await http.get(fleet.registry + "/health")).json() == {"status": "ok", "agents": 2, "running": 2}
        opened = await http.get(fleet.registry + "/", follow_redirects=False)  # a person opening the registry
        assert (opened.status_code, opened.headers["location"]) == (307, "/console")
        landed = await http.get(fleet.registry + "/", follow_redirects=True)
        assert landed.status_code == 200 and str(landed.url) == fleet.registry + "/console"
        assert 'id="sign-in-message"' in landed.text, "the console's sign-in page (no operators: the one-time link)"

        catalog = await http.get(fleet.registry + "/.well-known/ai-catalog.json")  # what catalog readers fetch
        assert catalog.headers["content-type"] == "application/ai-catalog+json"
        entries = {entry["displayName"]: entry for entry in catalog.json()["entries"]}
        assert catalog.json()["specVersion"] == "1.0" and set(entries) == {"reviewer", "writer"}
        assert entries["reviewer"]["mediaType"] == "application/a2a-agent-card+json"
        assert entries["reviewer"]["tags"] == ["code-review", "review", "security"]
        for name, entry in entries.items():
            assert (await http.get(entry["url"])).json()["name"] == name  # each entry leads to the agent's card

        code, out, err = await a2a_wrap("status", "--registry", fleet.registry)
        assert code == 0, err
        lines = out.splitlines()
        header = ["name", "state", "url", "backend", "model", "skills", "health", "restarts", "approvals"]
        assert lines[0].split() == header  # approvals: the column status reads from each agent's /metrics
        expected = ["reviewer", "running", reviewer["url"], "opencode", settings.backend.model, "code-review"]
        assert lines[2].split()[:6] == expected
        assert lines[3].split()[:2] == ["writer", "running"]

        await registry_of_remote_agents(http, [reviewer["url"], listed["writer"]["url"]])
    finally:
        assert await fleet.stop() == 0, fleet.log()
    assert processes_under(tmp_path) == []


async def registry_of_remote_agents(http: httpx.AsyncClient, urls: list[str]) -> None:
    """`a2a-wrap registry --agent URL ...`, as compose runs it: the same listing, from cards and /health."""
    down = f"http://127.0.0.1:{free_port()}"
    arguments = [argument for url in [*urls, down] for argument in ("--agent", url)]
    registry = await FleetProcess.start("registry", *arguments, "--health-interval", "0.5")
    try:
        listed = await wait_until(http, registry, running("reviewer", "writer"), timeout=30)
        assert listed["reviewer"]["skills"][0]["tags"] == ["review", "security"]
        assert listed["reviewer"]["url"] == urls[0] and listed["reviewer"]["backend"] == "opencode"
        assert listed["reviewer"]["supervised"] is False and listed["reviewer"]["restarts"] is None
        unreachable = listed[down.removeprefix("http://")]
        assert unreachable["state"] == "unreachable" and "not reachable" in unreachable["last_health"]["error"]
        assert list(await agents(http, registry.registry, "?skill=docs")) == ["writer"]
    finally:
        assert await registry.stop(signal.SIGINT) == 0, registry.log()
    code, out, err = await a2a_wrap("status", "--registry", registry.registry)
    assert code == 1 and out == ""
    assert f"Error: the registry at {registry.registry} is not reachable" in err
    assert "is `a2a-wrap fleet` (or `a2a-wrap registry`) running there?" in err
