"""Gemini CLI over ACP: the generic ACP backend with Gemini's command, provider and packages.

No pre-tool hook of Gemini CLI's is used (none verified): its ACP permission requests, which it sends before each
tool that changes anything (shell, write, edit), are decided by the shield, asked over A2A and audited as on any
ACP agent, and the sandbox holds whatever it runs without asking (reads, searches). See docs/backends.md.
"""

import shutil

from a2a_wrapper.backends.acp.backend import AcpBackend
from a2a_wrapper.backends.acp.connection import AgentExtras
from a2a_wrapper.backends.base import Capabilities, Prompt, Session
from a2a_wrapper.backends.gemini import launch
from a2a_wrapper.backends.gemini.turn import GeminiTurn
from a2a_wrapper.config.backends import GeminiSettings
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import InstallError
from a2a_wrapper.sandbox import Sandbox


class GeminiBackend(AcpBackend):
    kind = "gemini"
    # gemini-cli 0.61.0's session/load of a session made by an earlier process fails ("No previous sessions found
    # for this project."): the load first rewrites the session's file with only its context, then finds nothing
    # to resume. The wrapper then opens a new session for the context (seen; docs/backends.md).
    capabilities = Capabilities(questions=False, deny_reason=False, resume=False)

    def __init__(self, settings: AgentSettings, sandbox: Sandbox | None = None) -> None:
        assert isinstance(settings.backend, GeminiSettings)
        command, self._packages = launch.cli_command(settings.backend)
        acp = launch.acp_settings(settings.backend, command)
        super().__init__(settings.model_copy(update={"backend": acp}), sandbox)

    def extras(self, env: dict[str, str]) -> AgentExtras:
        """Its packages readable (Node runs their code from the managed install)."""
        if self._packages and shutil.which("node", path=env.get("PATH")) is None:
            raise InstallError("node is not on PATH; install Node.js 20 or newer to run the gemini backend")
        return AgentExtras(readable=self._packages)

    def turn(self, session: Session, prompt: Prompt) -> GeminiTurn:
        return GeminiTurn(self, session, prompt)
