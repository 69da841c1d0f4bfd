"""Red team, class 6: in compose and in a pod, the backend must not reach the wrapper's process, memory,
environment, state or sockets.

The real attack first: the compose fleet as compose/docker-compose.yml runs it (in docker), and one tool call of
the OpenCode agent, approved by its caller, trying every way out of the backend's container at once; the effects
are read from the wrapper's side afterwards. Then what the repository ships, as it would run: each compose agent's
config and services (its runtime, its approvals, its user, what its backend's container holds) and each pod
`deploy kubernetes` renders (a container of its own for the backend, without the wrapper's secrets, restricted).
"""

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.helpers.a2a_wire import approval_of, final_state, stream
from tests.helpers.compose_fleet import Fleet
from tests.helpers.tool_messages import answer_params, bash_params
from tests.test_deploy_kubernetes import EXAMPLES, objects, render

pytestmark = [pytest.mark.slow, pytest.mark.alone]  # the compose fleet: up once, in the phase that runs alone

REPO = Path(__file__).parent.parent.parent
COMPOSE = yaml.safe_load((REPO / "compose" / "docker-compose.yml").read_text())
COMPOSE_AGENTS = sorted(p.parent.name for p in (REPO / "compose" / "agents").glob("*/config.yaml"))


def _config(agent: str) -> dict[str, Any]:
    return dict(yaml.safe_load((REPO / "compose" / "agents" / agent / "config.yaml").read_text()))


# One approved tool call, as a person escaping would write it: every way out of the backend's container at once,
# each probe's result in its own file of the workspace (the fleet's volume), read from the wrapper's side after.
ATTACK = r"""
out=/workspace/attack; mkdir -p $out
for f in /proc/[0-9]*/environ; do tr '\0' '\n' < $f; done > $out/environs 2>&1
for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done > $out/processes 2>&1
ls -la /state /config > $out/state 2>&1; cat /state/state.db /config/config.yaml >> $out/state 2>&1
{ stat -c %i /run/a2a-wrapper/hook.sock;
  rm -f /run/a2a-wrapper/hook.sock; touch /run/a2a-wrapper/planted; mv /run/a2a-wrapper /run/moved;
  python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('/run/a2a-wrapper/impostor.sock')";
} > $out/sockets 2>&1
{ touch /usr/local/bin/planted; touch /etc/planted; touch /opt/a2a-wrapper/bin/planted; } > $out/system 2>&1
ls -la /var/run/docker.sock /run/docker.sock > $out/engine 2>&1
{ echo "$XDG_CONFIG_HOME"; mkdir -p "$XDG_CONFIG_HOME/opencode/plugin";
  echo 'export const P = async () => ({})' > "$XDG_CONFIG_HOME/opencode/plugin/planted.js"; } > $out/config 2>&1
printf '%s\n' 'import socket' 'print("interfaces", sorted(name for _, name in socket.if_nameindex()))' \
  'for host, port in (("127.0.0.1", 8000), ("model", 8765), ("copilot-coder", 8000), ("1.1.1.1", 53)):' \
  '    try:' '        socket.create_connection((host, port), 3).close()' '        print("connected", host, port)' \
  '    except OSError as exc:' '        print("not connected", host, port, type(exc).__name__)' > /tmp/probe.py
python3 /tmp/probe.py > $out/network 2>&1
echo done
"""


@pytest.fixture(scope="module")
def attacked(compose_fleet: Fleet) -> Iterator[tuple[Fleet, dict[str, str], str]]:
    """The attack run by the code-review agent's backend in the compose fleet, approved by its caller."""
    fleet = compose_fleet
    asyncio.run(_approved(f"http://127.0.0.1:{fleet.ports['CODE_REVIEW']}/a2a/jsonrpc", ATTACK))
    found = {}
    for name in ("environs", "processes", "state", "sockets", "engine", "config", "network"):
        read = fleet.run("exec", "-T", "code-review", "cat", f"/workspace/attack/{name}")
        found[name] = read.stdout
    after = fleet.run(
        "exec", "-T", "code-review", "sh", "-c", "stat -c %i /run/a2a-wrapper/hook.sock; ls /run/a2a-wrapper"
    )
    found["sockets-after"] = after.stdout
    planted = "ls /usr/local/bin/planted /etc/planted /opt/a2a-wrapper/bin/planted"
    found["system"] = fleet.run("exec", "-T", "code-review-backend", "sh", "-c", planted).stderr
    # The hook's socket as the attack found it (the backend, stopped when idle, may have started anew for it).
    before = found["sockets"].split("\n", 1)[0]
    yield fleet, found, f"{before}\negress.sock\ngiven\nhook.sock\nserved\n"


async def _approved(url: str, command: str) -> None:
    async with httpx.AsyncClient(timeout=180) as http:
        asked = await stream(http, url, bash_params(command, description="look around"))
        approval = approval_of(asked)  # the agent asks first: its rules ask before a command runs
        done = await stream(
            http, url, answer_params(asked[0]["task"], data={"approval": approval["id"], "option": "allow_once"})
        )
        assert final_state(done) == "TASK_STATE_COMPLETED", done[-1]


def test_a_tool_reads_no_secret_of_the_wrappers_environment(attacked) -> None:  # type: ignore[no-untyped-def]
    fleet, found, _ = attacked
    assert "OPENCODE_SERVER_PASSWORD" in found["environs"], "the probe did read environments (its backend's own)"
    for key in ("A2A_WRAP_CONSOLE_KEY", "A2A_WRAP_OPERATOR_KEY"):
        assert fleet.env[key] not in found["environs"] and key not in found["environs"], key


def test_a_tool_sees_no_process_of_the_wrappers(attacked) -> None:  # type: ignore[no-untyped-def]
    _, found, _ = attacked
    assert "a2a-wrap sidecar" in found["processes"], "the probe did list processes"
    assert "a2a-wrap serve" not in found["processes"] and "registry" not in found["processes"]


def test_a_tool_reaches_neither_the_wrappers_state_nor_its_config(attacked) -> None:  # type: ignore[no-untyped-def]
    _, found, _ = attacked
    assert "state.db: No such file" in found["state"] and "config.yaml: No such file" in found["state"], found["state"]


def test_the_wrappers_sockets_cannot_be_replaced_from_the_backends_container(attacked) -> None:  # type: ignore[no-untyped-def]
    _, found, inodes = attacked
    assert found["sockets"].count("Read-only file system") == 4, found["sockets"]
    assert found["sockets-after"] == inodes, "the same hook socket, nothing planted beside it"


def test_a_tool_writes_nothing_into_the_image(attacked) -> None:  # type: ignore[no-untyped-def]
    _, found, _ = attacked
    assert found["system"].count("No such file or directory") == 3, found["system"]


def test_a_tool_finds_no_container_engine(attacked) -> None:  # type: ignore[no-untyped-def]
    _, found, _ = attacked
    assert found["engine"].count("No such file or directory") == 2, found["engine"]


def test_a_tool_cannot_change_the_config_its_backend_loads(attacked) -> None:  # type: ignore[no-untyped-def]
    _, found, _ = attacked
    folder, *said = found["config"].splitlines()
    assert folder.startswith("/run/a2a-wrapper/given/"), folder  # the wrapper's copy, in its read-only folder
    assert "Read-only file system" in "\n".join(said), said


def test_a_tool_has_no_way_out_but_the_egress_proxy(attacked) -> None:  # type: ignore[no-untyped-def]
    """The backend's container has loopback only: neither the wrapper's own port on loopback, nor the fleet's
    services by name, nor the outside are reached directly (the proxy decides the rest, class 4)."""
    _, found, _ = attacked
    said = found["network"].splitlines()
    assert said[0] == "interfaces ['lo']", found["network"]
    assert len(said) == 5 and all(line.startswith("not connected") for line in said[1:]), found["network"]


@pytest.mark.parametrize("agent", COMPOSE_AGENTS)
def test_a_compose_agents_backend_runs_apart_from_the_wrapper(agent: str) -> None:
    assert _config(agent)["runtime"]["kind"] == "sidecar"
    backend = COMPOSE["services"][f"{agent}-backend"]
    assert "environment" not in backend and not any("state" in volume for volume in backend["volumes"])
    assert backend["network_mode"] == "none" and _config(agent)["runtime"]["network"] == "none"


@pytest.mark.parametrize("agent", COMPOSE_AGENTS)
def test_a_compose_agent_asks_before_its_tools_run(agent: str) -> None:
    config = _config(agent)
    assert not config.get("auto_approve") and config["shield"]["defaults"] == {"read": "allow"}


@pytest.mark.parametrize("service", [*COMPOSE_AGENTS, *(f"{agent}-backend" for agent in COMPOSE_AGENTS)])
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
