"""How Gemini CLI is started: `gemini --acp` (the managed install unless `backend.command` names one) and the ACP
settings the generic backend runs it with: its provider in `GOOGLE_GEMINI_BASE_URL` and `GEMINI_API_KEY`, which
the wrapper relays (the relay's URL and token, never the key)."""

import shutil
from pathlib import Path

from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.config.backends import AcpProvider, AcpSettings, GeminiSettings
from a2a_wrapper.errors import InstallError

ACP_FLAG = "--acp"
PACKAGE = Path("@google", "gemini-cli")
# Gemini CLI as one process with no telemetry: no relaunch of itself in a child with more memory, so that the
# process the wrapper watches (and stops) is the agent itself. GEMINI_CLI_TRUST_WORKSPACE is not set: an
# untrusted workspace's own `.gemini/` settings and hooks are not loaded.
OFFLINE_ENV = {"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_TELEMETRY_ENABLED": "false"}


def cli_command(settings: GeminiSettings) -> tuple[list[str], list[Path]]:
    """The command, and the folders it reads: the managed install's packages (Node runs their code)."""
    if settings.command is not None:
        return [*settings.command, *_flags(settings, settings.command)], []
    script = find_binary("gemini")  # node_modules/@google/gemini-cli/bundle/gemini.js
    node = shutil.which("node")
    if node is None:
        raise InstallError("node is not on PATH; install Node.js 20 or newer to run the gemini backend")
    modules = script.parents[len(PACKAGE.parts) + 1]
    return [node, str(script), *_flags(settings, [])], [modules]


def _flags(settings: GeminiSettings, given: list[str]) -> list[str]:
    flags = [] if ACP_FLAG in given else [ACP_FLAG]
    return flags + (["--model", settings.model] if settings.model is not None else [])


def acp_settings(settings: GeminiSettings, command: list[str]) -> AcpSettings:
    """The same agent as the generic ACP backend runs it: its command, env and provider (relayed the same way)."""
    provider = None
    if settings.provider is not None:
        provider = AcpProvider.model_validate(settings.provider.model_dump())
    shared = settings.model_dump(include=set(AcpSettings.model_fields) - {"kind", "command", "provider", "env"})
    return AcpSettings(**shared, command=command, env=OFFLINE_ENV | settings.env, provider=provider)
