"""What a backend container is made of: the docker SDK's `containers.run` arguments, from settings alone."""

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2a_wrapper.config.runtimes import DockerRuntime

AGENT_LABEL = "a2a-wrapper.agent"
SUPERVISOR_LABEL = "a2a-wrapper.supervisor-pid"
HOST_LABEL = "a2a-wrapper.supervisor-host"
_NETWORK_MODES = ("host", "bridge", "none")


@dataclass(frozen=True)
class Mount:
    """A host path bound at the same absolute path inside the container (so path rules mean the same there)."""

    path: Path
    read_only: bool = False
    at: Path | None = None  # where it appears inside, when not at its own path (read-only, over the backend's own)


@dataclass(frozen=True)
class ContainerSpec:
    agent: str
    argv: list[str]
    env: dict[str, str]
    workdir: Path
    mounts: list[Mount] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)  # published on 127.0.0.1 at the same number


def supervisor_labels(agent: str) -> dict[str, str]:
    return {AGENT_LABEL: agent, SUPERVISOR_LABEL: str(os.getpid()), HOST_LABEL: socket.gethostname()}


def run_options(spec: ContainerSpec, runtime: DockerRuntime) -> dict[str, Any]:
    """Keyword arguments of `client.containers.run` for one detached backend container."""
    workdir = spec.workdir.resolve()
    volumes = {str(workdir): {"bind": str(workdir), "mode": "rw"}}
    for mount in spec.mounts:
        path = str(mount.path.resolve())
        volumes[path] = {"bind": str(mount.at or path), "mode": "ro" if mount.read_only else "rw"}
    options: dict[str, Any] = {
        "image": runtime.image,
        "entrypoint": spec.argv[:1],  # the image's own entrypoint (if any) is not ours to prefix
        "command": spec.argv[1:],
        "environment": spec.env,
        "working_dir": str(workdir),
        "volumes": volumes,
        "user": f"{os.getuid()}:{os.getgid()}",  # files written in the workspace belong to the wrapper's user
        "init": True,  # an init as PID 1 forwards SIGTERM: stop takes milliseconds, not the kill timeout
        "labels": supervisor_labels(spec.agent),
        "detach": True,
    }
    if runtime.cpus is not None:
        options["nano_cpus"] = int(runtime.cpus * 1e9)
    if runtime.memory is not None:
        options["mem_limit"] = runtime.memory
    options.update(_network(spec, runtime.network))
    return options


def _network(spec: ContainerSpec, network: str) -> dict[str, Any]:
    """Host networking shares the host's loopback; any other network reaches the host through host-gateway."""
    if network == "host":
        return {"network_mode": "host"}
    is_mode = network in _NETWORK_MODES or network.startswith("container:")
    chosen: dict[str, Any] = {"network_mode": network} if is_mode else {"network": network}
    if network != "none":
        chosen["ports"] = {f"{port}/tcp": ("127.0.0.1", port) for port in spec.ports}
        chosen["extra_hosts"] = {"host.docker.internal": "host-gateway"}
    return chosen
