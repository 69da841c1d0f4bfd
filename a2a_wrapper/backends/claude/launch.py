"""How Claude Code is started: `claude-agent-acp` (the managed install unless `backend.command` names one), the
ACP settings the generic backend runs it with, and the settings.json the wrapper writes for it.

The settings are the wrapper's plane: made anew at every start in the backend's own folder, shown read-only over
`$CLAUDE_CONFIG_DIR/settings.json` in a sandbox (copied there without one), and the only settings file Claude Code
loads (`settingSources: ["user"]` on every session): a workspace's `.claude/settings*.json` could otherwise
disable the hook or widen the permissions. Their `permissions.defaultMode` is `default`, so Claude Code starts as
root (it refuses its bypass mode there) and never runs a tool on its own say; their PreToolUse hook (pretool.mjs)
hands every tool call to the wrapper's hook socket before it runs.
"""

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.backends.kit.isolation import produce_folder
from a2a_wrapper.config.backends import AcpProvider, AcpSettings, ClaudeSettings
from a2a_wrapper.errors import InstallError

HOOK_SCRIPT = Path(__file__).with_name("pretool.mjs")
HOOK_SOCKET = "claude-hook.sock"
ADAPTER = Path("@agentclientprotocol", "claude-agent-acp", "dist", "index.js")
HOOK_TIMEOUT = 24 * 3600  # seconds Claude Code waits for the hook: a person may be asked; the turn's own limits end it
# Claude Code offline: no update checks, telemetry, error reports or other calls beside the model's.
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
# Sent with every session/new and session/load: the user settings (the wrapper's file) are the only ones loaded.
SESSION_META: dict[str, object] = {"claudeCode": {"options": {"settingSources": ["user"]}}}


def adapter_command(settings: ClaudeSettings) -> tuple[list[str], list[Path]]:
    """The command, and the folders it reads: the managed install's packages (Node runs their code)."""
    if settings.command is not None:
        return list(settings.command), []
    modules = find_binary("claude").parents[2]  # node_modules/@anthropic-ai/claude-agent-sdk-<platform>/claude
    node = shutil.which("node")
    if node is None:
        raise InstallError("node is not on PATH; install Node.js 20 or newer to run the claude backend")
    return [node, str(modules / ADAPTER)], [modules]


def acp_settings(settings: ClaudeSettings, command: list[str]) -> AcpSettings:
    """The same agent as the generic ACP backend runs it: its command, env and provider (relayed the same way)."""
    env = OFFLINE_ENV | settings.env
    if settings.model is not None:
        env |= {"ANTHROPIC_MODEL": settings.model, "ANTHROPIC_SMALL_FAST_MODEL": settings.model}
    provider = None
    if settings.provider is not None:
        provider = AcpProvider.model_validate(settings.provider.model_dump())
    shared = settings.model_dump(include=set(AcpSettings.model_fields) - {"kind", "command", "provider", "env"})
    return AcpSettings(**shared, command=command, env=env, provider=provider)


def claude_settings(settings: ClaudeSettings, node: str, socket: Path) -> dict[str, Any]:
    """settings.json: the config's keys, then the wrapper's permission mode and PreToolUse hook over them."""
    own = dict(settings.claude_settings)
    hook = {"type": "command", "command": _hook_command(node, socket), "timeout": HOOK_TIMEOUT}
    hooks = {**(own.get("hooks") or {}), "PreToolUse": [{"matcher": "*", "hooks": [hook]}]}
    permissions = {**(own.get("permissions") or {}), "defaultMode": "default"}
    return {**own, "permissions": permissions, "hooks": hooks}


def write_settings(folder: Path, content: dict[str, Any]) -> Path:
    """The wrapper's folder made anew with settings.json in it; returns the file."""
    produce_folder(folder, {"settings.json": json.dumps(content, indent=2)})
    return folder / "settings.json"


def _hook_command(node: str, socket: Path) -> str:
    return shlex.join([node, str(HOOK_SCRIPT), str(socket)])
