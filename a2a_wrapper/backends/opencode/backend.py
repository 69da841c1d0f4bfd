"""The OpenCode backend: `opencode serve` spawned (or attached to), driven over HTTP and one SSE stream.

A spawned OpenCode that dies fails its running turns (through the event stream) and is started again with
backoff; its sessions live in its data folder, so the next one has them too.
"""

import asyncio
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

from a2a_wrapper.backends.base import Capabilities, Health, Identity, Prompt, Session, unhealthy
from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.backends.kit.peers import main_process
from a2a_wrapper.backends.kit.restarter import Restarter
from a2a_wrapper.backends.opencode import launch
from a2a_wrapper.backends.opencode.client import OpenCodeClient
from a2a_wrapper.backends.opencode.event_stream import BACKEND_EXITED, V1, EventStream
from a2a_wrapper.backends.opencode.hook import MAX_SOCKET_PATH, HookServer
from a2a_wrapper.backends.opencode.turn import HOOK_MISSING, OpenCodeTurn
from a2a_wrapper.background import cancel_and_wait
from a2a_wrapper.config.backends import OpenCodeSettings
from a2a_wrapper.config.runtimes import ProcessRuntime, SandboxRuntime
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import BackendUnavailable, NotFound
from a2a_wrapper.runtime import Child, Mount, listen_host, loopback_url, make_child
from a2a_wrapper.sandbox import Sandbox

log = logging.getLogger(__name__)

ATTACHED_UNHOOKED = (
    "[%s] attached to an OpenCode the wrapper did not start: the wrapper's tool hook is not installed there, so "
    "only the tool calls it asks permission for are checked"
)


class OpenCodeBackend:
    kind = "opencode"
    capabilities = Capabilities(questions=True, deny_reason=True, resume=True)
    installed = "opencode"  # the managed install (backends/install.py) its binary comes from by default
    dialect = V1  # its event stream's
    launcher = staticmethod(launch.prepare)  # the argv, environment and folders of one spawn

    def __init__(self, settings: AgentSettings, sandbox: Sandbox | None = None) -> None:
        assert settings.state_dir is not None
        assert isinstance(settings.backend, OpenCodeSettings)
        self.settings = settings.backend
        self._name = settings.card.name
        self._state_dir = settings.state_dir
        self._runtime = settings.runtime
        self._sandbox = sandbox
        self._child: Child | None = None
        self._binary = Path("opencode")  # resolved at each spawn
        self._opencode_pid: int | None = None  # the process the tool hook hears, found once per spawn
        self._client = OpenCodeClient(self.settings.workdir, self.settings.username)
        self._version: str | None = None  # as OpenCode's health call answered at its start
        self._events: EventStream | None = None
        self.hooks: HookServer | None = None  # sees every tool call; none on an OpenCode we only attach to
        self._reader: asyncio.Task[None] | None = None  # the event stream's
        # OpenCode runs one instance per directory, each with its own `/event` stream: a per-task workspace's
        # sessions are read on their directory's, held (as the main one) for the server's life.
        self._workspace_streams: dict[Path, tuple[EventStream, asyncio.Task[None]]] = {}
        self._short_sockets: Path | None = None  # the hook's socket folder, when the state folder's is too deep
        self._restarter = Restarter(f"{self._name}/opencode", self)

    # lifecycle

    async def start(self) -> None:
        self.settings.workdir.mkdir(parents=True, exist_ok=True)
        if self.settings.base_url:
            log.warning(ATTACHED_UNHOOKED, self._name)
            password = self.settings.password.get_secret_value() if self.settings.password else None
            await self._connect(self.settings.base_url, password)
        else:
            # Listening before OpenCode starts: the plugin we install reaches it from its first tool call on.
            # A container's processes are in a PID namespace of their own: the kernel names no pid of ours there.
            local = isinstance(self._runtime, SandboxRuntime | ProcessRuntime)
            checked = self._is_opencode if local else None
            self.hooks = HookServer(self._name, self._hook_socket(), self._parent_of, checked)
            await self.hooks.start()
            await self.spawn()
            self._restarter.start()
        self._reader = asyncio.create_task(self.events.run(), name=f"{self._name}-events")
        async with asyncio.timeout(self.settings.startup_timeout):
            await self.events.connected.wait()
        if not await self.hook_ready(self.settings.startup_timeout):
            raise BackendUnavailable(HOOK_MISSING)

    async def hook_ready(self, timeout: float) -> bool:
        """Whether OpenCode has loaded the tool hook (or runs without one, attached): it loads plugins as it starts
        its instance for the workspace, which the event stream's request does."""
        if self.hooks is None:
            return True
        try:
            async with asyncio.timeout(timeout):
                await self.hooks.loaded.wait()
        except TimeoutError:
            return False
        return True

    async def _parent_of(self, session_id: str) -> str | None:
        """A subagent's session's parent: as the event stream announced it, else as OpenCode keeps it."""
        known = self.events.parent_of(session_id)
        if known is not None:
            return known
        try:
            info = await self.request("GET", f"/session/{session_id}")
        except NotFound:
            return None
        return str(info["parentID"]) if info and info.get("parentID") else None

    def _is_opencode(self, pid: int) -> bool:
        """Whether `pid` is the OpenCode process the wrapper started (found once per start, before any tool runs)."""
        if self._opencode_pid is None and self._child is not None and isinstance(self._child.pid, int):
            self._opencode_pid = main_process(self._child.pid, self._binary)
        return pid != 0 and pid == self._opencode_pid

    def _hook_socket(self) -> Path:
        """The tool hook's socket: the sandbox's short socket folder, else the backend's own folder."""
        if self._sandbox is not None:
            return self._sandbox.wrapper_socket(launch.HOOK_SOCKET)
        path = launch.hook_socket(self._state_dir)
        if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
            return path
        # A caller's folder too deep for a socket's path gets a short private one (mode 0700), removed at stop (a
        # container is shown it, as it is shown the one in the state folder).
        self._short_sockets = Path(tempfile.mkdtemp(prefix="a2a-hook-"))
        return self._short_sockets / launch.HOOK_SOCKET

    def _hook_mount(self) -> list[Mount]:
        """The folder of the hook's socket, read-only, for a container (a sandbox shows it with its own sockets)."""
        return [Mount(self.hooks.path.parent, read_only=True)] if self.hooks and self._sandbox is None else []

    async def spawn(self) -> None:
        binary = self._binary = (self.settings.binary or find_binary(self.installed)).resolve()
        self._opencode_pid = None
        plan = self.launcher(binary, self.settings, self._state_dir, dict(os.environ), listen_host(self._runtime))
        if self._sandbox is not None:  # the plugin, inside, reaches the hook where the sandbox shows it
            plan.env[launch.HOOK_SOCKET_ENV] = str(self._sandbox.inside(launch.HOOK_SOCKET))
        elif self.hooks is not None:
            plan.env[launch.HOOK_SOCKET_ENV] = str(self.hooks.path)
        # A sandbox has its own network: the server's port inside is reached through a socket the bridge serves.
        socket = None
        if self._sandbox is not None and not self._sandbox.shares_network:
            socket = self._sandbox.served_socket("opencode.sock")
        self._child = self._make_child(plan, binary, socket)
        try:
            await self._child.start(launch.READY_LINE)
            match = await self._child.wait_ready(self.settings.startup_timeout)
            await self._connect(loopback_url(match.group(1)), plan.password, socket)
        except BaseException:
            await self._child.stop()
            raise

    def _make_child(self, plan: launch.Launch, binary: Path, socket: Path | None) -> Child:
        return make_child(
            f"{self._name}/opencode",
            plan.argv,
            plan.env,
            self.settings.workdir,
            self._runtime,
            agent=self._name,
            # In a container or a sandbox, at their host paths: the binary, the config the wrapper made and the
            # hook's socket read-only, the backend's own folders writable.
            mounts=[
                Mount(binary, read_only=True),
                Mount(plan.config, read_only=True),
                *self._hook_mount(),
                *map(Mount, plan.writable),
                *(Mount(source, read_only=True, at=place) for source, place in plan.given),
            ],
            ports=[plan.port],
            sandbox=self._sandbox,
            serve=[(socket.name, plan.port)] if socket else [],
        )

    async def _connect(self, base_url: str, password: str | None, socket: Path | None = None) -> None:
        http = await self._client.connect(base_url, password, socket)
        if self._events is None:
            self._events = EventStream(self._name, http, self.dialect.path, self.dialect)
        else:
            self._events.use(http)
        for stream, _ in self._workspace_streams.values():
            stream.use(http)
        self._version = (await self._client.wait_healthy()).get("version")

    async def stop(self) -> None:
        await self._restarter.stop()
        if self._reader is not None:
            await cancel_and_wait(self._reader)
        for _, reader in self._workspace_streams.values():
            await cancel_and_wait(reader)
        if self._child is not None:
            await self._child.stop()
        if self.hooks is not None:
            await self.hooks.stop()
        if self._short_sockets is not None:
            shutil.rmtree(self._short_sockets, ignore_errors=True)
        await self._client.close()

    @property
    def pid(self) -> int | str | None:
        return self._child.pid if self._child is not None else None

    @property
    def restarts(self) -> int:
        return self._restarter.restarts

    async def wait_exit(self) -> int:
        assert self._child is not None
        return await self._child.wait()

    async def exited(self, code: int) -> None:
        for stream in [self.events, *(stream for stream, _ in self._workspace_streams.values())]:
            stream.broadcast({"type": BACKEND_EXITED, "properties": {"code": code}})
        if self.hooks is not None:
            self.hooks.loaded.clear()  # the next OpenCode says hello again once it has loaded the hook
        assert self._child is not None
        await self._child.stop()

    async def request(
        self, method: str, path: str, body: Any = None, timeout: float | None = None, directory: Path | None = None
    ) -> Any:
        """One call to OpenCode; about the instance of `directory` (a context's workspace) when given."""
        return await self._client.request(method, in_directory(path, directory), body, timeout)

    async def health(self) -> Health:
        status: Identity = {"kind": self.kind, "restarts": self.restarts}
        if self._child is not None:
            status["pid"] = self._child.pid
            if not self._child.running:
                return unhealthy(status, "the opencode process is not running")
        return {**status, "healthy": True, "version": self._version}

    # sessions and turns

    async def open_session(self, context_key: str, resume: str | None = None, directory: Path | None = None) -> Session:
        if directory is not None:
            self.events_for(directory)  # reading that instance's events from now on, before its first turn
        if resume:
            try:
                await self.request("GET", f"/session/{resume}", directory=directory)
                return Session(resume, created=False, directory=directory)
            except NotFound:
                log.info("[%s] session %s is gone from OpenCode; creating a new one", self._name, resume)
        title = {"title": f"A2A context {context_key[:64]}"}
        created = await self.request("POST", "/session", title, directory=directory)
        return Session(created["id"], created=True, directory=directory)

    async def close_session(self, session_id: str) -> None:
        await self.request("DELETE", f"/session/{session_id}")

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        """An attached OpenCode outlives us: requests our last run left waiting are rejected, never kept."""
        waiting = [p for p in await self.request("GET", "/permission") or [] if p.get("sessionID") in session_ids]
        for request in waiting:
            await self.request("POST", f"/permission/{request['id']}/reply", {"reply": "reject", "message": reason})
        return len(waiting)

    def turn(self, session: Session, prompt: Prompt) -> OpenCodeTurn:
        return OpenCodeTurn(self, session, prompt)

    @property
    def mcp_servers(self) -> list[str]:
        return self.settings.enabled_mcp_servers

    def events_for(self, directory: Path | None) -> EventStream:
        """The event stream of `directory`'s instance (the workdir's: `events`), started at its first use."""
        if directory is None:
            return self.events
        held = self._workspace_streams.get(directory)
        if held is None:
            stream = EventStream(f"{self._name}/{directory.name}", self.events.http, in_directory("/event", directory))
            reader = asyncio.create_task(stream.run(), name=f"{self._name}-events-{directory.name}")
            held = self._workspace_streams[directory] = (stream, reader)
        return held[0]

    @property
    def events(self) -> EventStream:
        if self._events is None:
            raise BackendUnavailable("the OpenCode backend is not started")
        return self._events


def in_directory(path: str, directory: Path | None) -> str:
    """`path` about the OpenCode instance of `directory` (the query beats the connection's directory header)."""
    if directory is None:
        return path
    return f"{path}{'&' if '?' in path else '?'}directory={quote(str(directory), safe='/')}"
