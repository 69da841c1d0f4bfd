"""The docker runtime: OpenCode in a real container of a real engine, its shell commands confined there.

Needs a Docker engine (DOCKER_HOST) and the image compose/build-image.sh builds (A2A_WRAP_TEST_IMAGE, default
local/a2a-wrapper:dev); without them the engine tests skip, saying why.
"""

import asyncio
import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest
from docker.errors import DockerException
from pydantic import ValidationError

from a2a_wrapper.agent import running_agent
from a2a_wrapper.config.runtimes import DockerRuntime
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import BackendUnavailable, ConfigError
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.runtime import ContainerProcess, ContainerSpec
from a2a_wrapper.runtime.options import AGENT_LABEL, HOST_LABEL, SUPERVISOR_LABEL
from tests.conftest import SettingsFactory, serving
from tests.helpers.a2a_wire import data_parts, final_state, stream, user_message

IMAGE = os.environ.get("A2A_WRAP_TEST_IMAGE", "local/a2a-wrapper:dev")


@pytest.fixture(scope="module")
def engine() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env()
    except DockerException as exc:
        pytest.skip(f"no Docker engine reachable: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="module")
def image(engine: docker.DockerClient) -> str:
    try:
        engine.images.get(IMAGE)
    except DockerException as exc:
        pytest.skip(f"image {IMAGE} is not in the engine (build it with compose/build-image.sh): {exc}")
    return IMAGE


def containers_of(engine: docker.DockerClient, agent: str) -> list[Any]:
    return list(engine.containers.list(all=True, filters={"label": f"{AGENT_LABEL}={agent}"}))


def agent_name() -> str:
    return f"docker-test-{uuid.uuid4().hex[:8]}"


@pytest.mark.slow
async def test_the_agents_shell_commands_run_in_the_container(
    engine: docker.DockerClient, image: str, make_settings: SettingsFactory, offline_model: OfflineModel
) -> None:
    name, marker = agent_name(), f"/tmp/a2a-docker-marker-{uuid.uuid4().hex}"
    runtime = DockerRuntime(image=image, network="host", cpus=1.5, memory="1g")
    command = f"(tr '\\0' ' ' </proc/1/cmdline; echo; grep -m1 docker /proc/self/cgroup) >where.txt; echo in >{marker}"
    async with serving(make_settings(name=name, auto_approve=True, runtime=runtime), offline_model) as served:
        [container] = containers_of(engine, name)
        async with httpx.AsyncClient(timeout=120) as http:
            tool_call = "[[tool:bash " + json.dumps({"command": command}) + "]]"
            events = await stream(http, served.jsonrpc, {"message": user_message(tool_call)})
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert [r["status"] for r in data_parts(events, "tool_result")] == ["completed"]
        # The workspace is the same path inside and out; the command's view of the machine is the container's.
        pid1, cgroup = (served.workdir / "where.txt").read_text().splitlines()
        assert "docker-init" in pid1, "init=True: the engine's init is PID 1"
        assert container.id in cgroup, "the command ran in the container's cgroup"
        assert not await asyncio.to_thread(os.path.exists, marker), "a file outside the workspace stays inside"
        assert container.exec_run(["cat", marker]).output.decode().strip() == "in"
        container.reload()
        assert container.labels[SUPERVISOR_LABEL] == str(os.getpid())
        assert container.attrs["HostConfig"]["NanoCpus"] == 1_500_000_000
        assert container.attrs["HostConfig"]["Memory"] == 1024**3
        assert (await served.agent.backend.health())["pid"] == container.short_id
    assert containers_of(engine, name) == [], "the container is removed when the agent stops"


@pytest.mark.slow
async def test_bridge_network_publishes_the_backend_on_loopback_only(
    engine: docker.DockerClient, image: str, make_settings: SettingsFactory
) -> None:
    name = agent_name()
    settings = make_settings(name=name, auto_approve=True, runtime=DockerRuntime(image=image, network="bridge"))
    async with running_agent(settings) as agent:
        [container] = containers_of(engine, name)
        bindings = [b for port in container.attrs["NetworkSettings"]["Ports"].values() for b in port or []]
        assert bindings and {b["HostIp"] for b in bindings} == {"127.0.0.1"}
        assert container.attrs["HostConfig"]["ExtraHosts"] == ["host.docker.internal:host-gateway"]
        status = await agent.backend.health()
        assert status["healthy"] is True and status["pid"] == container.short_id
    assert containers_of(engine, name) == []


@pytest.mark.slow
async def test_a_missing_image_is_a_clear_error_before_anything_runs(
    engine: docker.DockerClient, make_settings: SettingsFactory
) -> None:
    name, missing = agent_name(), f"local/not-built-{uuid.uuid4().hex[:6]}:0"
    settings = make_settings(name=name, runtime=DockerRuntime(image=missing))
    started = time.monotonic()
    with pytest.raises(ConfigError, match=rf"runtime.image: the image '{missing}' is not in the Docker engine"):
        async with running_agent(settings):
            pass
    assert time.monotonic() - started < 10, "no registry lookup, no wait"
    assert containers_of(engine, name) == []


async def test_no_engine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    spec = ContainerSpec(agent="nobody", argv=["true"], env={}, workdir=tmp_path)
    container = ContainerProcess("nobody/opencode", spec, DockerRuntime(image="any"))
    with pytest.raises(BackendUnavailable, match=r"no Docker engine answers at unix://.*no-engine\.sock"):
        await container.start("ready")


def dead_pid() -> int:
    probe = subprocess.Popen(["true"])
    probe.wait()
    return probe.pid


@pytest.mark.slow
async def test_containers_left_by_a_gone_wrapper_are_removed_at_start(
    engine: docker.DockerClient, image: str, tmp_path: Path
) -> None:
    name = agent_name()
    labels = {AGENT_LABEL: name, HOST_LABEL: socket.gethostname()}
    sleeper = {"image": image, "entrypoint": ["sleep", "300"], "command": [], "init": True, "detach": True}
    stale = engine.containers.run(**sleeper, labels={**labels, SUPERVISOR_LABEL: str(dead_pid())})
    alive = engine.containers.run(**sleeper, labels={**labels, SUPERVISOR_LABEL: str(os.getpid())})
    spec = ContainerSpec(agent=name, argv=["bash", "-c", "echo ready now; sleep 300"], env={}, workdir=tmp_path)
    container = ContainerProcess(f"{name}/test", spec, DockerRuntime(image=image, network="none"))
    try:
        await container.start(r"ready (\w+)")
        assert (await container.wait_ready(30)).group(1) == "now"
        ids = {c.id for c in containers_of(engine, name)}
        assert stale.id not in ids, "the stale container is gone"
        assert {alive.id, container.container_id} <= ids, "a live wrapper's container is left alone"
        started = time.monotonic()
        await container.stop(grace=5)
        assert time.monotonic() - started < 3, "the init forwards SIGTERM: no kill timeout"
        assert not container.running and await container.wait() == 143
    finally:
        await container.stop()
        alive.remove(force=True)
    assert containers_of(engine, name) == []


@pytest.mark.parametrize("backend", [{"kind": "copilot"}, {"kind": "acp", "command": ["agent"]}])
def test_docker_runtime_is_refused_for_backends_it_cannot_run(backend: dict[str, Any]) -> None:
    with pytest.raises(
        ValidationError, match=rf"runtime.kind: docker runs the opencode backend only.*{backend['kind']}"
    ):
        AgentSettings(card={"name": "x"}, backend=backend, runtime={"kind": "docker", "image": "img"})


def test_docker_runtime_is_refused_with_an_attached_opencode() -> None:
    with pytest.raises(ValidationError, match=r"backend\.base_url attaches"):
        AgentSettings(
            card={"name": "x"}, backend={"base_url": "http://127.0.0.1:1"}, runtime={"kind": "docker", "image": "i"}
        )
