"""The pod `deploy kubernetes` renders, run here without a cluster, and attacked from its backend's container.

Each container of the rendered StatefulSet becomes a bubblewrap process given what a container runtime gives it:
a PID and a user namespace (the pod's user, no capabilities), an image (this machine's /usr and /etc, the
project's venv and source, the managed backends, all read-only), a read-only root, exactly the volumes its
`volumeMounts` name at their paths (read-only where they say so), and its `env` with the Secret's values for
its `secretKeyRef`s. Both share this machine's network, as a pod's containers share one. Each runs what the
image would (`a2a-wrap` and the container's args): the wrapper, and the sidecar that starts the real backend —
OpenCode, Copilot, an ACP agent — against the offline model.

Then an approved tool does what an escaping agent would from there — reads every /proc/*/environ, lists the
wrapper's state and config folders, plants a file among the wrapper's sockets — and the test looks at what it
found and at the sockets folder.
"""

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.backends.install import backends_dir, find_binary
from a2a_wrapper.deploy.manifests import load_deployment, render_kubernetes
from a2a_wrapper.deploy.options import KubernetesOptions
from a2a_wrapper.offline_model import MODEL_ID, OfflineModel
from a2a_wrapper.ports import free_port
from a2a_wrapper.sandbox.bubblewrap import find_bwrap
from tests.helpers.a2a_wire import final_state, stream
from tests.helpers.serve_process import wait_healthy
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

REPO = Path(__file__).parent.parent
CONSOLE_KEY = "pod-console-key-7d41c0"
MODEL_KEY = "pod-model-key-5be2a9"  # the provider's key, a Secret's: the backend's provider URL is the wrapper's relay
OFFLINE_OPENCODE = {  # `opencode acp` is given its provider in its own config, as compose/agents/acp-coder is
    "model": f"offline/{MODEL_ID}",
    "enabled_providers": ["offline"],
    "provider": {
        "offline": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": "${POD_MODEL_URL}", "apiKey": "not-needed"},
            "models": {MODEL_ID: {"name": MODEL_ID, "tool_call": True}},
        }
    },
}
BACKENDS = {
    "opencode": {
        "kind": "opencode",
        "model": f"offline/{MODEL_ID}",
        "provider": {"id": "offline", "base_url": "${POD_MODEL_URL}", "models": [MODEL_ID]},
    },
    "copilot": {
        "kind": "copilot",
        "model": MODEL_ID,
        "provider": {"type": "openai", "base_url": "${POD_MODEL_URL}", "api_key": "${POD_MODEL_KEY}"},
    },
    "acp": {
        "kind": "acp",
        "command": [str(find_binary("opencode")), "acp"],  # the image has it on PATH; here, the managed install
        "env": {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_CONFIG_CONTENT": json.dumps(OFFLINE_OPENCODE)},
    },
}
LOOK = (
    "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; echo; done > found.txt 2>/dev/null; "
    "ls /data /config >> found.txt 2>&1; (echo planted > /run/a2a-wrapper/planted) 2>> found.txt; echo looked"
)


def image() -> list[str]:
    """bwrap's arguments for what the image holds, read-only at the paths it has here."""
    arguments = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for link in ("bin", "lib", "lib64", "sbin"):
        if Path("/", link).is_symlink():
            arguments += ["--symlink", os.readlink(Path("/", link)), f"/{link}"]
    for folder in {Path(sys.prefix), Path(sys.base_prefix), REPO, backends_dir()}:
        arguments += ["--ro-bind", str(folder), str(folder)]
    return arguments


def image_env() -> dict[str, str]:
    """What the image's ENV sets (compose/Dockerfile): its PATH, the managed backends, this tree's source."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "A2A_WRAP_BACKENDS_DIR": str(backends_dir()),
        "PYTHONPATH": str(REPO),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
    }


def container_command(
    pod: dict[str, Any], container: dict[str, Any], volumes: dict[str, Path], env: dict[str, str]
) -> list[str]:
    """The container as bubblewrap runs it: its user, its mounts, its environment, `a2a-wrap` with its args."""
    security = pod["securityContext"]
    command = [str(find_bwrap()), "--unshare-user", "--uid", str(security["runAsUser"])]
    command += ["--gid", str(security["runAsGroup"]), "--unshare-pid", "--unshare-ipc", "--as-pid-1"]
    command += ["--die-with-parent", "--cap-drop", "ALL", "--clearenv", "--proc", "/proc", "--dev", "/dev"]
    for mount in container["volumeMounts"]:
        how = "--ro-bind" if mount.get("readOnly") else "--bind"
        command += [how, str(volumes[mount["name"]]), mount["mountPath"]]
    # The image after the volumes: this tree and its venv may live under /tmp here (a clone in CI), where the
    # container has a volume of its own; in the image they are elsewhere.
    command += image()
    if container["securityContext"]["readOnlyRootFilesystem"]:
        command += ["--remount-ro", "/"]
    for name, value in env.items():
        command += ["--setenv", name, value]
    return [*command, "--", sys.executable, "-m", "a2a_wrapper", *container["args"]]


def container_env(container: dict[str, Any], secret: dict[str, str]) -> dict[str, str]:
    """The image's environment and the container's `env`, each `secretKeyRef` given the Secret's value."""
    env = image_env()
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
        elif (key := item["valueFrom"]["secretKeyRef"]["key"]) in secret:
            env[item["name"]] = secret[key]
    return env


@asynccontextmanager
async def running(command: list[str], log: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    with log.open("wb") as output:
        process = await asyncio.create_subprocess_exec(*command, stdout=output, stderr=output)
    try:
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)  # bwrap's child, the container's PID 1, dies with it (and all in it)
        await asyncio.wait_for(process.wait(), 30)


def rendered(backend: dict[str, Any], mode: str, folder: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The StatefulSet and the ConfigMap's files of an agent of `backend` whose every tool call is approved."""
    config = folder / "source" / "config.yaml"
    config.parent.mkdir()
    settings = {"card": {"name": "pod"}, "backend": backend, "auto_approve": True, "workspace": {"mode": mode}}
    config.write_text(yaml.safe_dump(settings))
    rendering = render_kubernetes(load_deployment([config]), KubernetesOptions())
    documents = list(yaml.safe_load_all(rendering.files["agent-pod.yaml"]))
    (stateful_set,) = (doc for doc in documents if doc["kind"] == "StatefulSet")
    (config_map,) = (doc for doc in documents if doc["kind"] == "ConfigMap")
    return stateful_set, config_map["data"]


@pytest.mark.parametrize(
    ("kind", "mode"), [(kind, "in_place") for kind in BACKENDS] + [("opencode", "per_task")], ids=str
)
async def test_a_tool_in_the_pods_backend_container_reaches_nothing_of_the_wrappers(
    kind: str, mode: str, offline_model: OfflineModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POD_MODEL_URL", "http://127.0.0.1:9/v1")  # the render needs them set; only their names
    monkeypatch.setenv("POD_MODEL_KEY", "not-this-one")  # reach the manifests
    stateful_set, config_files = rendered(BACKENDS[kind], mode, tmp_path)
    pod = stateful_set["spec"]["template"]["spec"]
    volumes = {}
    for name in [volume["name"] for volume in pod["volumes"]] + [
        claim["metadata"]["name"] for claim in stateful_set["spec"]["volumeClaimTemplates"]
    ]:
        volumes[name] = tmp_path / "volumes" / name
        volumes[name].mkdir(parents=True)
    for file_name, text in config_files.items():
        (volumes["config"] / file_name).write_text(text)
    secret = {"POD_MODEL_URL": offline_model.base_url, "POD_MODEL_KEY": MODEL_KEY, "A2A_WRAP_CONSOLE_KEY": CONSOLE_KEY}
    port = free_port()
    commands = {}
    for container in pod["containers"]:
        env = container_env(container, secret)
        if container["name"] == "agent":  # the pod's own port 8000 would be this machine's: a free one instead
            env |= {"A2A_WRAP_SERVER__HOST": "127.0.0.1", "A2A_WRAP_SERVER__PORT": str(port)}
        commands[container["name"]] = container_command(pod, container, volumes, env)
    url = f"http://127.0.0.1:{port}"
    async with AsyncExitStack() as stack, httpx.AsyncClient(timeout=120) as http, asyncio.timeout(240):
        for name, command in commands.items():
            await stack.enter_async_context(running(command, tmp_path / f"{name}.log"))
        await wait_healthy(http, url)
        events = await stream(http, url + "/a2a/jsonrpc", bash_params(LOOK, description="look"))
        logs = {name: (tmp_path / f"{name}.log").read_text(errors="replace")[-3000:] for name in commands}
        assert final_state(events) == "TASK_STATE_COMPLETED", (events[-1], logs)
    # In place: the workspace; per task: the context's copy, among the backend's folders.
    (written,) = (volumes["backend"] / ("workspace" if mode == "in_place" else "backend")).rglob("found.txt")
    found = written.read_text(errors="replace")
    assert "=/srv/a2a/backend/" in found, found  # the look worked: it read the backend's own environment
    assert CONSOLE_KEY not in found and MODEL_KEY not in found  # nothing of the wrapper's container's
    assert "ls: cannot access '/data'" in found and "ls: cannot access '/config'" in found
    assert "Read-only file system" in found
    assert not (volumes["sockets"] / "planted").exists()
    assert any((volumes["data"] / "state").iterdir())  # the state the tool could not see is there
