"""Red team, class 6: in compose and in a pod, the backend shares the wrapper's process, memory, environment.

The real attack first: the compose example's agent (runtime: process, every call approved, the console key in
the wrapper's environment, as compose/docker-compose.yml runs it) served as a real `a2a-wrap serve` process;
one tool call reads every /proc/*/environ it can and writes what it found to the workspace. Then what the
repository ships, as it would run: each compose agent's config and service (its runtime, its approvals, its
user, the secrets of the container its backend runs in) and each pod `deploy kubernetes` renders (whether the
backend has a container of its own, without the wrapper's secrets, under the restricted standard).
"""

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.offline_model import MODEL_ID
from tests.helpers.a2a_wire import final_state, stream
from tests.helpers.serve_process import start_serve, wait_healthy
from tests.helpers.tool_messages import bash_params
from tests.test_deploy_kubernetes import EXAMPLES, objects, render

pytestmark = pytest.mark.slow

REPO = Path(__file__).parent.parent.parent
COMPOSE = yaml.safe_load((REPO / "compose" / "docker-compose.yml").read_text())
COMPOSE_AGENTS = sorted(p.parent.name for p in (REPO / "compose" / "agents").glob("*/config.yaml"))
NO_BRANCH = "containers: {} (class 6 has no fix on main yet)"


def _config(agent: str) -> dict[str, Any]:
    return dict(yaml.safe_load((REPO / "compose" / "agents" / agent / "config.yaml").read_text()))


@pytest.mark.xfail(
    strict=True,
    reason=NO_BRANCH.format(
        "runtime: process puts the backend beside the wrapper: an approved tool reads the console key in "
        "/proc/PID/environ of the wrapper"
    ),
)
async def test_a_tool_of_the_compose_agent_reads_no_secret_of_the_wrappers(offline_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    key = "console-" + uuid.uuid4().hex
    config = _config("code-review")
    port = free_port()
    config |= {"server": {"host": "127.0.0.1", "port": port}, "state_dir": str(tmp_path / "state")}
    config["backend"] |= {
        "binary": str(find_binary("opencode")),
        "workdir": str(tmp_path / "workspace"),
        "provider": {"id": "offline", "base_url": offline_model.base_url, "models": [MODEL_ID]},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    process = await start_serve(path, {"A2A_WRAP_CONSOLE_KEY": key})
    try:
        async with httpx.AsyncClient(timeout=120) as http:
            await wait_healthy(http, f"http://127.0.0.1:{port}")
            look = "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done > found.txt 2>/dev/null; echo done"
            events = await stream(http, f"http://127.0.0.1:{port}/a2a/jsonrpc", bash_params(look, description="look"))
            assert final_state(events) == "TASK_STATE_COMPLETED", events[-1]
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)
    found = (tmp_path / "workspace" / "found.txt").read_text(errors="replace")
    assert "OPENCODE" in found, "the tool did read environments"  # the look itself worked
    assert key not in found


@pytest.mark.xfail(strict=True, reason=NO_BRANCH.format("each compose agent runs its backend as a plain child"))
@pytest.mark.parametrize("agent", COMPOSE_AGENTS)
def test_a_compose_agents_backend_runs_apart_from_the_wrapper(agent: str) -> None:
    assert _config(agent).get("runtime", {}).get("kind", "sandbox") != "process"


@pytest.mark.xfail(strict=True, reason=NO_BRANCH.format("each compose agent approves every call (auto_approve)"))
@pytest.mark.parametrize("agent", COMPOSE_AGENTS)
def test_a_compose_agent_asks_before_its_tools_run(agent: str) -> None:
    assert not _config(agent).get("auto_approve")


@pytest.mark.xfail(strict=True, reason=NO_BRANCH.format("each compose agent runs as root (no user:, no USER)"))
@pytest.mark.parametrize("service", COMPOSE_AGENTS)
def test_a_compose_agent_runs_as_a_user_who_is_not_root(service: str) -> None:
    user = str(COMPOSE["services"][service].get("user", "")) or _image_user()
    assert user not in ("", "0", "root") and not user.startswith(("0:", "root:"))


def _image_user() -> str:
    users = [
        line.split()[1]
        for line in (REPO / "compose" / "Dockerfile").read_text().splitlines()
        if line.startswith("USER ")
    ]
    return users[-1] if users else ""


def _agent_pods() -> list[tuple[str, dict[str, Any]]]:
    pods = []
    for example in EXAMPLES:
        files = render(example)
        for workload in objects(files, "StatefulSet") + objects(files, "Deployment"):
            containers = workload["spec"]["template"]["spec"]["containers"]
            if any(c.get("args", [""])[0] == "serve" for c in containers):
                pods.append((f"{example}:{workload['metadata']['name']}", workload["spec"]["template"]["spec"]))
    return pods


PODS = _agent_pods()


def _secret_names(container: dict[str, Any]) -> set[str]:
    return {
        e["name"] for e in container.get("env", []) if "valueFrom" in e or "KEY" in e["name"] or "TOKEN" in e["name"]
    }


@pytest.mark.parametrize(("name", "pod"), PODS, ids=[name for name, _ in PODS])
def test_a_pods_backend_has_a_container_of_its_own_without_the_wrappers_secrets(name: str, pod: dict[str, Any]) -> None:
    containers = pod["containers"]
    assert len(containers) > 1, "the backend in a container of its own"
    backend = [c for c in containers if c.get("args", [""])[0] != "serve"]
    assert backend and not any(_secret_names(c) for c in backend) and not pod.get("shareProcessNamespace")


@pytest.mark.parametrize(("name", "pod"), PODS, ids=[name for name, _ in PODS])
def test_a_pod_is_restricted_and_mounts_no_service_account_token(name: str, pod: dict[str, Any]) -> None:
    assert pod.get("automountServiceAccountToken") is False and pod["securityContext"].get("runAsNonRoot") is True
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False and context["capabilities"]["drop"] == ["ALL"]
