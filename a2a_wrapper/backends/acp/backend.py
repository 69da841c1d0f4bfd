"""The generic ACP backend: any Agent Client Protocol agent, spawned and spoken to over stdio.

One agent process serves every context; each context is an ACP session (`session/new` with the
workspace as cwd and the configured MCP servers, or `session/load` of the one a previous run made).
A process that dies is started again with backoff; the turn it was running fails with a sentence,
and each session is loaded again (or recreated) by the next turn that needs it.

ACP has no system message: a configured system prompt is put before the first prompt of each new
session, and `system_prompt_mode: replace` is refused.
"""

import logging
import os
from pathlib import Path

from acp import RequestError

from a2a_wrapper.backends.acp.connection import AgentConnection, AgentExtras
from a2a_wrapper.backends.acp.launch import agent_env, agent_home
from a2a_wrapper.backends.acp.turn import AcpTurn
from a2a_wrapper.backends.base import Capabilities, Health, Identity, Prompt, Session, unhealthy
from a2a_wrapper.backends.kit.restarter import Restarter
from a2a_wrapper.config.backends import AcpSettings
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import BackendUnavailable, ConfigError, SessionGone
from a2a_wrapper.sandbox import Sandbox

log = logging.getLogger(__name__)


class AcpBackend:
    kind = "acp"
    # ACP has no question request, and its reject option carries no message.
    capabilities = Capabilities(questions=False, deny_reason=False, resume=True)

    def __init__(self, settings: AgentSettings, sandbox: Sandbox | None = None) -> None:
        assert settings.state_dir is not None
        self._sandbox = sandbox
        assert isinstance(settings.backend, AcpSettings)
        if settings.backend.system_prompt_mode == "replace" and settings.backend.system_prompt:
            raise ConfigError(
                "backend.system_prompt_mode: 'replace' is not possible with an ACP agent (ACP has no system "
                "message); use 'append', which puts backend.system_prompt before each new session's first prompt"
            )
        self.settings = settings.backend
        self._name = f"{settings.card.name}/{self.kind}"
        self._state_dir = settings.state_dir
        self._agent: AgentConnection | None = None
        self._restarter = Restarter(self._name, self)
        self._ready = False
        self._loaded: set[str] = set()  # sessions the running agent process has open
        self._directories: dict[str, Path] = {}  # a session's own workspace, where it has one
        self._fresh: set[str] = set()  # new sessions not prompted yet: the system prompt goes first
        self._spare: str | None = None  # the session made at start to check the agent signs in

    # lifecycle

    async def start(self) -> None:
        """Spawns the agent, checks it answers `initialize` and lets us open a session (auth)."""
        self.settings.workdir.mkdir(parents=True, exist_ok=True)
        await self.spawn()
        assert self._agent is not None
        self._spare = await self._agent.new_session()
        self._loaded.add(self._spare)
        self._restarter.start()

    @property
    def restarts(self) -> int:
        return self._restarter.restarts

    async def spawn(self) -> None:
        env = agent_env(self.settings, self._state_dir, dict(os.environ))
        home = agent_home(self._state_dir)
        agent = AgentConnection(self._name, self.settings, env, self._sandbox, home, self.extras(env))
        self._agent = agent
        try:
            await agent.open()
        except BaseException:
            await agent.close()
            raise
        self._loaded.clear()
        self._ready = True

    def extras(self, env: dict[str, str]) -> AgentExtras:
        """What a kind built on this one adds to the agent's start (env: its environment, to add to)."""
        return AgentExtras()

    async def stop(self) -> None:
        await self._restarter.stop()
        if self._agent is not None:
            await self._agent.close()
        self._ready = False

    @property
    def pid(self) -> int | None:
        return self._agent.child.pid if self._agent is not None else None

    async def wait_exit(self) -> int:
        assert self._agent is not None
        return await self._agent.child.wait()

    async def exited(self, code: int) -> None:
        """A dead agent's running turn fails as its connection closes."""
        self._ready = False
        assert self._agent is not None
        await self._agent.close()

    async def health(self) -> Health:
        agent = self._agent
        status: Identity = {"kind": self.kind, "restarts": self.restarts}
        if agent is None:
            return unhealthy(status, "the ACP agent is not started")
        status["pid"], status["agent"] = agent.child.pid, agent.agent_name
        if (model := agent.model or self.settings.model) is not None:
            status["model"] = model  # the agent's own word for it first
        if not (self._ready and agent.alive):
            return unhealthy(status, "the ACP agent is not running; it is being restarted")
        return {**status, "healthy": True}

    @property
    def agent_name(self) -> str:
        return self._agent.agent_name if self._agent is not None else "the ACP agent"

    @property
    def agent(self) -> AgentConnection:
        if self._agent is None or not self._ready:
            raise BackendUnavailable("the ACP agent is not running; it is being restarted")
        return self._agent

    # sessions

    async def open_session(self, context_key: str, resume: str | None = None, directory: Path | None = None) -> Session:
        if resume is not None:
            if directory is not None:
                self._directories[resume] = directory
            try:
                await self.ensure_loaded(resume)
                return Session(resume, created=False, directory=directory)
            except SessionGone as exc:
                log.info("[%s] %s; creating a new session for context %s", self._name, exc, context_key)
        session_id = None
        if directory is None:  # the spare was made in the workdir
            session_id, self._spare = self._spare, None
        if session_id is None:
            session_id = await self.agent.new_session(directory)
            self._loaded.add(session_id)
        if directory is not None:
            self._directories[session_id] = directory
        self._fresh.add(session_id)
        return Session(session_id, created=True, directory=directory)

    async def ensure_loaded(self, session_id: str) -> None:
        """The running agent process has this session open: loaded now if it was not (SessionGone if it cannot)."""
        if session_id in self._loaded:
            return
        agent = self.agent
        if not agent.can_load:
            raise SessionGone(f"{agent.agent_name} cannot load session {session_id} (no loadSession capability)")
        try:
            await agent.load_session(session_id, self._directories.get(session_id))
        except (RequestError, ConnectionError) as exc:
            raise SessionGone(f"{agent.agent_name} could not load session {session_id}: {exc}") from exc
        self._loaded.add(session_id)

    async def close_session(self, session_id: str) -> None:
        """Forgotten here; the agent keeps its own record (ACP's session/close is optional and unstable)."""
        self._loaded.discard(session_id)
        self._fresh.discard(session_id)

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        """Nothing to reject: an ACP permission request lives on its connection, which died with the last run."""
        return 0

    def take_first_prompt(self, session_id: str) -> str | None:
        """The system prompt, once per new session (ACP has no system message)."""
        if session_id not in self._fresh:
            return None
        self._fresh.discard(session_id)
        return self.settings.system_prompt or None

    def turn(self, session: Session, prompt: Prompt) -> AcpTurn:
        return AcpTurn(self, session, prompt)
