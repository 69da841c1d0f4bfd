"""Claude Code over ACP: the generic ACP backend plus the wrapper's PreToolUse hook and settings file.

Every tool call Claude Code makes passes its PreToolUse hook first (pretool.mjs, installed by launch.py): the hook
posts it to the wrapper's hook socket (the same server as OpenCode's plugin, opencode/hook.py) and the call waits
on the running turn's stream as a Permission, decided, asked over A2A and audited like any other. Only an allow
lets it run, and then Claude Code asks nothing more; a deny's sentence reaches the model as the hook's error. An
ACP permission request that still comes (a tool the hook did not hold) is decided as on any ACP agent.
"""

import logging
import shutil

from a2a_wrapper.backends.acp.backend import AcpBackend
from a2a_wrapper.backends.acp.connection import AgentExtras
from a2a_wrapper.backends.acp.launch import agent_home
from a2a_wrapper.backends.base import Capabilities, Prompt, Session
from a2a_wrapper.backends.claude import launch
from a2a_wrapper.backends.claude.turn import ClaudeTurn
from a2a_wrapper.backends.opencode.hook import HookServer
from a2a_wrapper.config.backends import ClaudeSettings
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import InstallError
from a2a_wrapper.sandbox import Sandbox

log = logging.getLogger(__name__)


class ClaudeBackend(AcpBackend):
    kind = "claude"
    # The hook's deny reason reaches the model; Claude Code asks no questions over ACP without elicitation.
    capabilities = Capabilities(questions=False, deny_reason=True, resume=True)

    def __init__(self, settings: AgentSettings, sandbox: Sandbox | None = None) -> None:
        assert isinstance(settings.backend, ClaudeSettings) and settings.state_dir is not None
        self.claude = settings.backend
        command, self._packages = launch.adapter_command(self.claude)
        acp = launch.acp_settings(self.claude, command)
        super().__init__(settings.model_copy(update={"backend": acp}), sandbox)
        self._folder = settings.state_dir / "claude"
        socket = sandbox.wrapper_socket(launch.HOOK_SOCKET) if sandbox else self._folder / "hook" / launch.HOOK_SOCKET
        # Claude Code runs the hook as its own child, as it runs tools: the peer is not checked (see docs/backends.md).
        self.hooks = HookServer(self._name, socket, _no_parent)
        self._socket_inside = sandbox.inside(launch.HOOK_SOCKET) if sandbox else socket

    async def start(self) -> None:
        await self.hooks.start()  # listening before Claude Code starts: its first tool call reaches it
        try:
            await super().start()
        except BaseException:
            await self.hooks.stop()
            raise

    async def stop(self) -> None:
        await super().stop()
        await self.hooks.stop()

    def extras(self, env: dict[str, str]) -> AgentExtras:
        """Its settings file over its config folder's, its packages and the hook script readable."""
        node = shutil.which("node", path=env.get("PATH"))
        if node is None:
            raise InstallError("node is not on PATH; install Node.js 20 or newer to run the claude backend")
        config_dir = agent_home(self._state_dir) / "home" / ".claude"
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
        content = launch.claude_settings(self.claude, node, self._socket_inside)
        made = launch.write_settings(self._folder / "given", content)
        return AgentExtras(
            readable=[*self._packages, launch.HOOK_SCRIPT],
            given=[(made, config_dir / "settings.json")],
            session_meta=launch.SESSION_META,
            own_config=True,
        )

    def turn(self, session: Session, prompt: Prompt) -> ClaudeTurn:
        return ClaudeTurn(self, session, prompt)


async def _no_parent(session_id: str) -> str | None:
    """A subagent's calls carry its parent's session id: no session of Claude Code's has a parent to look up."""
    return None
