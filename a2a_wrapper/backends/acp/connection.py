"""One ACP agent process and the JSON-RPC connection to it: spawned (as launch.py prepares it), initialized,
closed."""

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    PromptCapabilities,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
)

from a2a_wrapper import __version__
from a2a_wrapper.backends.acp.client import WrapperClient
from a2a_wrapper.backends.acp.launch import agent_command, mcp_servers
from a2a_wrapper.backends.acp.reader import YieldingReader
from a2a_wrapper.backends.kit.isolation import config_folder, writable_folders
from a2a_wrapper.config.backends import AcpSettings
from a2a_wrapper.errors import BackendUnavailable, Unauthorized
from a2a_wrapper.process import ChildProcess
from a2a_wrapper.sandbox import Sandbox, program_paths
from a2a_wrapper.sandbox.trees import copy_anew

log = logging.getLogger(__name__)

_AUTH_REQUIRED = -32000


@dataclass(frozen=True)
class AgentExtras:
    """What a kind built on ACP adds to a plain agent: more it reads (its package, the wrapper's hook), files the
    wrapper made shown read-only over places in its own folders, and `_meta` sent with every session/new and load."""

    readable: Sequence[Path] = ()
    given: Sequence[tuple[Path, Path]] = ()
    session_meta: Mapping[str, Any] = field(default_factory=dict)
    own_config: bool = True  # whether its config folder is its own (writable), as a generic ACP agent's is


class AgentConnection:
    """The agent process, its JSON-RPC connection and what it said in `initialize`."""

    def __init__(
        self,
        name: str,
        settings: AcpSettings,
        env: dict[str, str],
        sandbox: Sandbox | None,
        home: Path,
        extras: AgentExtras = AgentExtras(),
    ) -> None:
        self.client = WrapperClient(name, tuple(settings.enabled_mcp_servers))
        command = agent_command(settings.command, env)
        if sandbox is not None:  # the agent's folders writable, its program readable, the wrapper's files read-only
            own = [*writable_folders(home), *([config_folder(home)] if extras.own_config else [])]
            programs = [*program_paths(command), *extras.readable]
            wrapped = sandbox.wrap(command, env, own=own, programs=programs, given=extras.given)
            command, env = wrapped.argv, wrapped.env
        else:
            for source, place in extras.given:  # no sandbox to show them: copied, as the wrapper made them
                copy_anew(source, place)
        self.child = ChildProcess(name, command, env, settings.workdir, stdio=True)
        self._settings = settings
        self._meta: dict[str, Any] = dict(extras.session_meta)
        self._conn: ClientSideConnection | None = None
        self.info: InitializeResponse | None = None
        self.model: str | None = None  # the model its last new session reported (a `model` config option), if any

    @property
    def alive(self) -> bool:
        """Running and still talking: its stdout closes the moment it dies, before the process is reaped."""
        return self.child.running and not self.child.stdout.at_eof()

    @property
    def conn(self) -> ClientSideConnection:
        if self._conn is None:
            raise BackendUnavailable("the ACP agent is not connected")
        return self._conn

    @property
    def agent_name(self) -> str:
        agent = self.info.agent_info if self.info else None
        return f"{agent.name} {agent.version}" if agent else "the ACP agent"

    @property
    def prompt_capabilities(self) -> PromptCapabilities:
        capabilities = self.info.agent_capabilities if self.info else None
        return (capabilities.prompt_capabilities if capabilities else None) or PromptCapabilities()

    @property
    def can_load(self) -> bool:
        return bool(self.info and self.info.agent_capabilities and self.info.agent_capabilities.load_session)

    async def open(self) -> None:
        """Spawn the agent and `initialize` it (protocol 1), within `startup_timeout`."""
        try:
            await self.child.start()
        except OSError as exc:
            raise BackendUnavailable(f"cannot start the ACP agent {self._settings.command[0]!r}: {exc}") from exc
        # the client implements updates and permission requests only: fs/* and terminal/* are refused
        stdout = YieldingReader(self.child.stdout, self.client.deliver)
        self._conn = ClientSideConnection(cast(Client, self.client), self.child.stdin, stdout)
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
        )
        try:
            async with asyncio.timeout(self._settings.startup_timeout):
                self.info = await self._conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=capabilities,
                    client_info=Implementation(name="a2a-wrap", version=__version__),
                )
        except TimeoutError:
            raise BackendUnavailable(self._failed(f"did not answer initialize within {self._timeout}")) from None
        except (ConnectionError, RequestError) as exc:
            raise BackendUnavailable(self._failed(f"failed initialize ({exc})")) from exc
        if self.info.protocol_version != PROTOCOL_VERSION:
            raise BackendUnavailable(
                f"{self.agent_name} speaks ACP protocol {self.info.protocol_version}; "
                f"the wrapper speaks {PROTOCOL_VERSION}"
            )
        log.info("[%s] %s initialized (pid %s)", self.child.name, self.agent_name, self.child.pid)

    async def new_session(self, directory: Path | None = None) -> str:
        """A new session working in `directory` (a context's own workspace), else in the workdir."""
        try:
            created = await self.conn.new_session(
                cwd=str(directory or self._settings.workdir), mcp_servers=mcp_servers(self._settings), **self._meta
            )
        except RequestError as exc:
            raise self._refused("session/new", exc) from exc
        except ConnectionError as exc:
            raise BackendUnavailable(f"{self.agent_name} is not running ({exc})") from exc
        self.model = _model_of(created.config_options) or self.model
        return created.session_id

    async def load_session(self, session_id: str, directory: Path | None = None) -> None:
        """Raises RequestError or ConnectionError when the agent cannot load it."""
        await self.conn.load_session(
            cwd=str(directory or self._settings.workdir),
            session_id=session_id,
            mcp_servers=mcp_servers(self._settings),
            **self._meta,
        )

    async def close(self) -> None:
        """Stops the process group (bounded), then the connection: requests still waiting fail."""
        await self.child.stop()
        if self._conn is not None:
            await self._conn.close()

    def _refused(self, method: str, exc: RequestError) -> Exception:
        if exc.code == _AUTH_REQUIRED or "auth" in str(exc).lower():
            methods = "; ".join(_describe(m) for m in (self.info.auth_methods if self.info else None) or ()) or "none"
            return Unauthorized(
                f"{self.agent_name} refused {method}: {exc}. It offers these ways to sign in: {methods}. "
                "Sign it in, or give it credentials through backend.env."
            )
        return BackendUnavailable(f"{self.agent_name} refused {method}: {exc} (code {exc.code})")

    @property
    def _timeout(self) -> str:
        return f"{self._settings.startup_timeout:g} s"

    def _failed(self, what: str) -> str:
        return f"the ACP agent {' '.join(self._settings.command)} {what}; its last output: {self.child.last_output()}"


def _describe(method: Any) -> str:
    described = f"{method.id}"
    if getattr(method, "description", None):
        described += f" ({method.description})"
    return described


def _model_of(options: Sequence[SessionConfigOptionSelect | SessionConfigOptionBoolean] | None) -> str | None:
    """The current value of the session's `model` option (`opencode acp` reports one; not every agent does)."""
    for option in options or ():
        if isinstance(option, SessionConfigOptionSelect) and option.category == "model":
            return str(option.current_value)
    return None
