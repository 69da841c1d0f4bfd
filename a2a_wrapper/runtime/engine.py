"""The Docker engine as the runtime needs it: a client, an image that must be local, stale containers removed.

Blocking calls: run them through `asyncio.to_thread`. Docker's own errors are translated here, once.
"""

import logging
import os
import socket

import docker
from docker.errors import DockerException, ImageNotFound
from docker.models.containers import Container

from a2a_wrapper.errors import BackendUnavailable, ConfigError
from a2a_wrapper.runtime.options import AGENT_LABEL, HOST_LABEL, SUPERVISOR_LABEL

log = logging.getLogger(__name__)


def connect() -> docker.DockerClient:
    """A client of the engine DOCKER_HOST names (default: the local socket), or a sentence saying none answers."""
    try:
        return docker.from_env()
    except DockerException as exc:
        where = os.environ.get("DOCKER_HOST") or "the default socket"
        raise BackendUnavailable(
            f"runtime.kind is docker, but no Docker engine answers at {where} (set DOCKER_HOST?): {exc}"
        ) from exc


def require_image(client: docker.DockerClient, image: str) -> None:
    """The image must already be in the engine: it is never pulled (a lookup would go to a registry)."""
    try:
        client.images.get(image)
    except ImageNotFound:
        raise ConfigError(
            f"runtime.image: the image {image!r} is not in the Docker engine, and images are never pulled; "
            "build it (compose/build-image.sh) or `docker load` it first"
        ) from None
    except DockerException as exc:
        raise BackendUnavailable(f"the Docker engine could not look up runtime.image {image!r}: {exc}") from exc


def remove_stale(client: docker.DockerClient, agent: str) -> list[str]:
    """Containers of this agent whose wrapper (a process on this host) is gone; removed. Returns their ids."""
    removed = []
    for container in client.containers.list(all=True, filters={"label": f"{AGENT_LABEL}={agent}"}):
        if _supervisor_alive(container):
            continue
        log.warning("[%s] removing container %s left by a wrapper that is gone", agent, container.short_id)
        try:
            container.remove(force=True)
        except DockerException as exc:
            log.warning("[%s] could not remove stale container %s: %s", agent, container.short_id, exc)
            continue
        removed.append(container.id)
    return removed


def _supervisor_alive(container: Container) -> bool:
    labels = container.labels
    if labels.get(HOST_LABEL) != socket.gethostname():
        return True  # another machine's wrapper: not ours to judge
    try:
        pid = int(labels.get(SUPERVISOR_LABEL, ""))
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    return True
