"""The Copilot backend: the Copilot CLI (`copilot --headless --stdio`) driven through github-copilot-sdk.

One CLI child per agent, one Copilot session per A2A context (its id derived from the context). A CLI that dies
fails its running turns and is started again with backoff; sessions are resumed from its state folder.
"""

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from copilot import CopilotClient, CopilotSession
from copilot.generated.rpc import PermissionDecisionReject

from a2a_wrapper.backends.base import Capabilities, Health, Identity, Prompt, Session, unhealthy
from a2a_wrapper.backends.copilot import launch, sdk
from a2a_wrapper.backends.copilot.program import unpacked
from a2a_wrapper.backends.copilot.turn import CopilotTurn, Decision, blocked, unanswered
from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.backends.kit.restarter import Restarter
from a2a_wrapper.backends.kit.router import SessionRouter
from a2a_wrapper.config.backends import CopilotSettings
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import BackendError, BackendUnavailable, SessionGone
from a2a_wrapper.sandbox import Sandbox

log = logging.getLogger(__name__)


class CopilotBackend:
    kind = "copilot"
    capabilities = Capabilities(questions=True, deny_reason=True, resume=True)

    def __init__(self, settings: AgentSettings, sandbox: Sandbox | None = None) -> None:
        assert settings.state_dir is not None
        assert isinstance(settings.backend, CopilotSettings)
        self._sandbox = sandbox
        self._settings = settings.backend
        self._name = settings.card.name
        self._state_dir = settings.state_dir
        self._launch: launch.Launch | None = None
        self._client: CopilotClient | None = None
        self._attached: dict[str, CopilotSession] = {}  # sessions resumed or created on the current client
        self._directories: dict[str, Path] = {}  # a session's own workspace, where it has one
        self._turns: SessionRouter[CopilotTurn] = SessionRouter()
        self._restarter = Restarter(f"{self._name}/copilot", self)
        self._down: str | None = "the Copilot CLI is not started"

    # lifecycle

    async def start(self) -> None:
        binary = self._settings.binary or find_binary("copilot")
        program = await unpacked(binary, self._sandbox.programs_root() if self._sandbox else None)
        self._launch = launch.prepare(binary, program, self._settings, self._state_dir, dict(os.environ))
        self._settings.workdir.mkdir(parents=True, exist_ok=True)
        await self.spawn()
        self._restarter.start()

    async def spawn(self) -> None:
        assert self._launch is not None
        try:
            self._client = await sdk.start_client(self._launch, self._settings, self._sandbox)
        except BackendUnavailable as exc:
            self._down = f"the Copilot CLI could not be started: {exc}"
            raise
        self._down = None
        log.info("[%s] copilot CLI started (pid %s)", self._name, self.pid)

    async def stop(self) -> None:
        await self._restarter.stop()
        for turn in self._turns.take_all():
            turn.backend_exited("The agent is shutting down.")
        if self._client is not None:
            await sdk.stop(self._client)
            log.info("[%s] copilot CLI stopped", self._name)
        self._client, self._down = None, "the Copilot CLI is stopped"

    @property
    def pid(self) -> int | None:
        process = sdk.cli_process(self._client)
        return process.pid if process is not None else None

    @property
    def restarts(self) -> int:
        return self._restarter.restarts

    async def wait_exit(self) -> int:
        process = sdk.cli_process(self._client)
        assert process is not None
        return await asyncio.to_thread(process.wait)

    async def exited(self, code: int) -> None:
        """The running turns fail; sessions are resumed on the next CLI as turns need them."""
        self._down = f"the Copilot CLI (pid {self.pid}) exited with code {code}; it is being restarted"
        sentence = f"The Copilot CLI stopped during the turn (exit code {code}); it is being restarted."
        for turn in self._turns.take_all():
            turn.backend_exited(sentence + " Send the message again.")
        self._attached.clear()
        if self._client is not None:
            await sdk.force_stop(self._client)

    async def health(self) -> Health:
        status: Identity = {"kind": self.kind, "restarts": self.restarts, "pid": self.pid}
        process = sdk.cli_process(self._client)
        if self._down is not None or self._client is None or process is None or process.poll() is not None:
            return unhealthy(status, self._down or "the Copilot CLI is not running")
        return {**status, "healthy": True}

    # sessions

    async def open_session(self, context_key: str, resume: str | None = None, directory: Path | None = None) -> Session:
        derived = launch.session_id_for(context_key)
        for candidate in dict.fromkeys(c for c in (resume, derived) if c):
            if directory is not None:
                self._directories[candidate] = directory
            if candidate in self._attached or await self._exists(candidate):
                await self._resume(candidate)
                return Session(candidate, created=False, directory=directory)
        client = self._running_client()
        options = self._session_options(directory)
        try:
            self._attached[derived] = await client.create_session(
                session_id=derived, **options, **self._handlers(derived)
            )
        except Exception as exc:
            raise BackendError(f"Copilot could not create a session: {exc}") from exc
        return Session(derived, created=True, directory=directory)

    async def close_session(self, session_id: str) -> None:
        client = self._running_client()
        attached = self._attached.pop(session_id, None)
        try:
            if attached is not None:
                await attached.disconnect()
            if await self._exists(session_id):
                await client.delete_session(session_id)
        except Exception as exc:
            raise BackendError(f"Copilot could not delete session {session_id}: {exc}") from exc

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        """Nothing to reject: Copilot asks through handlers of this process, answered in-process, so no
        permission request outlives the wrapper (the CLI child and its requests end with it)."""
        return 0

    def turn(self, session: Session, prompt: Prompt) -> CopilotTurn:
        return CopilotTurn(self, session, prompt)

    @property
    def mcp_servers(self) -> list[str]:
        return self._settings.enabled_mcp_servers

    # the turn's host

    async def attach(self, session_id: str, turn: CopilotTurn) -> CopilotSession:
        """The session on the current client (resumed after a CLI restart), with `turn` receiving its requests."""
        if session_id not in self._attached and not await self._exists(session_id):
            raise SessionGone(f"Copilot has no session {session_id}")
        sdk_session = await self._resume(session_id)
        self._turns.open(session_id, turn)
        return sdk_session

    def detach(self, session_id: str, turn: CopilotTurn) -> None:
        self._turns.close(session_id, turn)

    def _session_options(self, directory: Path | None = None) -> dict[str, Any]:
        token = self._launch.github_token if self._launch else None
        return launch.session_options(self._settings, token, directory)

    async def _resume(self, session_id: str) -> CopilotSession:
        if session_id in self._attached:
            return self._attached[session_id]
        client = self._running_client()
        try:
            options = self._session_options(self._directories.get(session_id))
            sdk_session = await client.resume_session(session_id, **options, **self._handlers(session_id))
        except Exception as exc:
            raise BackendError(f"Copilot could not resume session {session_id}: {exc}") from exc
        self._attached[session_id] = sdk_session
        return sdk_session

    async def _exists(self, session_id: str) -> bool:
        try:
            return await self._running_client().get_session_metadata(session_id) is not None
        except BackendUnavailable:
            raise
        except Exception as exc:
            raise BackendUnavailable(f"The Copilot CLI does not answer: {exc}") from exc

    def _running_client(self) -> CopilotClient:
        if self._client is None or self._down is not None:
            raise BackendUnavailable(f"The Copilot backend is not available: {self._down or 'not started'}")
        return self._client

    def _handlers(self, session_id: str) -> dict[str, Any]:
        """The session's pre-tool hook, permission and user-input handlers: they go to whichever turn runs in it."""

        async def on_pre_tool_use(hook: Any, invocation: Any) -> dict[str, str]:
            turn = self._turns.get(session_id)
            if turn is None:
                return blocked("No turn is running in this session; nothing may run.")
            return await turn.pre_tool_use(dict(hook))

        async def on_permission_request(request: Any, invocation: Any) -> Decision:
            turn = self._turns.get(session_id)
            if turn is None:
                return PermissionDecisionReject(feedback="No turn is running in this session; nothing may run.")
            return await turn.permission(request.to_dict())

        async def on_user_input_request(request: Any, invocation: Any) -> dict[str, Any]:
            turn = self._turns.get(session_id)
            if turn is None:
                return unanswered()
            return await turn.question(dict(request))

        return {
            "hooks": {"on_pre_tool_use": on_pre_tool_use},
            "on_permission_request": on_permission_request,
            "on_user_input_request": on_user_input_request,
        }
