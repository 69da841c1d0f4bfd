"""A backend in a Docker container, shaped like `ChildProcess`: output logged by line, readiness by a line."""

import asyncio
import logging
import re
from typing import Any

import docker
from docker.errors import DockerException, NotFound
from docker.models.containers import Container

from a2a_wrapper.config.runtimes import DockerRuntime
from a2a_wrapper.errors import BackendUnavailable
from a2a_wrapper.process import OutputLog
from a2a_wrapper.runtime import engine
from a2a_wrapper.runtime.options import ContainerSpec, run_options

log = logging.getLogger(__name__)

_UNKNOWN_EXIT = -1


class ContainerProcess:
    """Runs the spec's argv in a new container of `runtime.image`; every docker SDK call runs in a thread."""

    def __init__(self, name: str, spec: ContainerSpec, runtime: DockerRuntime) -> None:
        self.name = name
        self._spec = spec
        self._runtime = runtime
        self._client: docker.DockerClient | None = None
        self._container: Container | None = None
        self._pump: asyncio.Task[None] | None = None
        self._exit: asyncio.Future[int] | None = None
        self._output = OutputLog(name)

    @property
    def pid(self) -> str | None:
        """The container's short id."""
        return self._container.short_id if self._container else None

    @property
    def container_id(self) -> str | None:
        return self._container.id if self._container else None

    @property
    def running(self) -> bool:
        return self._exit is not None and not self._exit.done()

    async def start(self, ready_pattern: str) -> None:
        loop = asyncio.get_running_loop()
        self._output.expect(ready_pattern)
        self._exit = loop.create_future()
        self._client = client = await asyncio.to_thread(engine.connect)
        try:
            await asyncio.to_thread(engine.require_image, client, self._runtime.image)
            await asyncio.to_thread(engine.remove_stale, client, self._spec.agent)
            self._container = await asyncio.to_thread(client.containers.run, **run_options(self._spec, self._runtime))
        except DockerException as exc:
            await self._close_client()
            raise BackendUnavailable(f"{self.name}: no container started from {self._runtime.image!r}: {exc}") from exc
        except BaseException:
            await self._close_client()
            raise
        log.info("[%s] started container %s from %s", self.name, self.pid, self._runtime.image)
        self._pump = asyncio.create_task(self._read_output(), name=f"{self.name}-output")

    async def wait_ready(self, timeout: float) -> re.Match[str]:
        return await self._output.wait_ready(timeout)

    def last_output(self) -> str:
        return self._output.last()

    async def wait(self) -> int:
        assert self._exit is not None, "start() first"
        return await asyncio.shield(self._exit)

    async def _read_output(self) -> None:
        assert self._container is not None and self._exit is not None
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(self._follow_logs, self._container, loop)
        code = await asyncio.to_thread(self._exit_code, self._container)
        self._output.exited(code)
        log.info("[%s] container %s exited with code %s", self.name, self.pid, code)
        self._exit.set_result(code)

    def _follow_logs(self, container: Container, loop: asyncio.AbstractEventLoop) -> None:
        """In a thread: the container's output until it exits, handed to the loop line by line."""
        pending = b""
        try:
            for chunk in container.logs(stream=True, follow=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    loop.call_soon_threadsafe(self._output.line, raw.decode(errors="replace").rstrip())
        except DockerException as exc:
            log.debug("[%s] output stream ended: %s", self.name, exc)
        if pending:
            loop.call_soon_threadsafe(self._output.line, pending.decode(errors="replace").rstrip())

    @staticmethod
    def _exit_code(container: Container) -> int:
        try:
            result: dict[str, Any] = container.wait()
        except DockerException:
            return _UNKNOWN_EXIT  # removed under us, or the engine went away
        return int(result.get("StatusCode", _UNKNOWN_EXIT))

    async def stop(self, grace: float = 5.0) -> None:
        """SIGTERM through the container's init, a bounded wait, then SIGKILL; the container is removed."""
        container = self._container
        self._output.stop_waiting()
        if container is None or self._client is None:
            return  # never started, or already stopped
        try:
            await asyncio.to_thread(container.stop, timeout=max(1, round(grace)))
        except DockerException as exc:
            log.warning("[%s] stopping container %s failed: %s", self.name, self.pid, exc)
        if self._pump is not None:
            await self._pump
        try:
            await asyncio.to_thread(container.remove, force=True)
        except NotFound:
            pass
        except DockerException as exc:
            log.warning("[%s] removing container %s failed: %s", self.name, self.pid, exc)
        await self._close_client()

    async def _close_client(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await asyncio.to_thread(client.close)
