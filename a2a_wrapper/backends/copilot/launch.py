"""How the Copilot CLI is started: its binary, isolated folders, a small environment, its credentials, session options.

The child gets the kit's isolated environment (an allow-list of the wrapper's, folders of its own) plus
`backend.env`, and runs its code from the folder the wrapper unpacked it into (program.py), never from its cache.
With a provider of the user's own (BYOK), the CLI also runs offline (`COPILOT_OFFLINE`), which it accepts only when
the provider's URL and a model are in its environment too; the provider itself travels on every session.
"""

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a2a_wrapper.backends.copilot.program import Program
from a2a_wrapper.backends.kit import mcp
from a2a_wrapper.backends.kit.isolation import (
    config_folder,
    isolated_env,
    produce_folder,
    shown_over,
    writable_folders,
)
from a2a_wrapper.config.backends import CopilotProvider, CopilotSettings
from a2a_wrapper.errors import ConfigError

TOKEN_ENV = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")  # the CLI's own order
# What the CLI loads from COPILOT_HOME as settings or code: MCP servers it starts, hooks it runs, plugins,
# extensions, agents, skills, LSP servers, instructions (read off the pinned CLI). COPILOT_HOME is also where it
# keeps its sessions, so it stays writable; these are made by the wrapper at each start (empty: everything the
# wrapper gives travels on the session) and shown read-only over it, so nothing planted there is ever loaded.
CONTROL_ENTRIES: dict[str, str | None] = {
    "mcp-config.json": json.dumps({"mcpServers": {}}),
    "settings.json": "{}",
    "lsp-config.json": "{}",
    "copilot-instructions.md": "",
    "hooks": None,
    "agents": None,
    "skills": None,
    "extensions": None,
    "installed-plugins": None,
    "plugins": None,
}
_SESSION_NAMESPACE = uuid.UUID("5f0c9a36-3c1e-4f57-9f7e-2d0f6f0b6a51")


@dataclass(frozen=True)
class Launch:
    binary: Path
    env: dict[str, str]
    copilot_home: Path  # the SDK's base_directory (COPILOT_HOME): config and session state
    github_token: str | None  # given to each session (session_options), never to the CLI's environment
    home: Path  # the CLI's own folders (HOME, XDG_*, TMPDIR) live under it
    program: Program  # the CLI's code, unpacked by the wrapper: read-only in a sandbox

    @property
    def writable(self) -> list[Path]:
        return [*writable_folders(self.home), self.copilot_home]

    given: list[tuple[Path, Path]]  # the control entries the wrapper made, each over its place in COPILOT_HOME


def prepare(
    binary: Path, program: Program, backend: CopilotSettings, state_dir: Path, base_env: dict[str, str]
) -> Launch:
    """Folders created; the environment and credentials for one `copilot --headless --stdio`."""
    # With a provider of the user's own the CLI needs no GitHub token: none is given, so none reaches a tool.
    token = github_token(backend, base_env) if backend.provider is None else None
    check_credentials(backend, token)
    home = state_dir / "copilot"
    copilot_home = home / "copilot-home"
    copilot_home.mkdir(parents=True, exist_ok=True)
    env = isolated_env(home, base_env) | backend.env | program.env()
    produce_folder(config_folder(home), {f"copilot/{name}": content for name, content in CONTROL_ENTRIES.items()})
    places = {name: copilot_home / name for name in CONTROL_ENTRIES}
    given = shown_over(config_folder(home) / "copilot", places, home)
    if backend.provider is not None:
        assert backend.model is not None  # check_credentials
        env |= {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": backend.provider.base_url}
        env |= {"COPILOT_PROVIDER_TYPE": backend.provider.type, "COPILOT_MODEL": backend.model}
    return Launch(
        binary=binary, env=env, copilot_home=copilot_home, github_token=token, home=home, program=program, given=given
    )


def github_token(backend: CopilotSettings, base_env: dict[str, str]) -> str | None:
    if backend.github_token is not None and backend.github_token.get_secret_value():
        return backend.github_token.get_secret_value()
    for name in TOKEN_ENV:
        if base_env.get(name):
            return base_env[name]
    return None


def check_credentials(backend: CopilotSettings, token: str | None) -> None:
    if backend.provider is not None and not backend.model:
        raise ConfigError("backend.model is required with backend.provider: the id of the model the provider serves")
    if backend.provider is None and token is None:
        raise ConfigError(
            "The Copilot backend needs credentials: set backend.github_token (or COPILOT_GITHUB_TOKEN, GH_TOKEN or "
            "GITHUB_TOKEN in the environment), or backend.provider with backend.model for a model of your own."
        )


def session_id_for(context_key: str) -> str:
    """The same context always names the same Copilot session, so a restarted wrapper finds it again."""
    return str(uuid.uuid5(_SESSION_NAMESPACE, context_key))


def session_options(
    backend: CopilotSettings, github_token: str | None = None, directory: Path | None = None
) -> dict[str, Any]:
    """Keyword arguments for both create_session and resume_session (the provider is not kept by the CLI); the
    session works in `directory` (its own workspace) when given, else in the workdir.

    The GitHub token travels here, on the SDK's stdio to the CLI, and never in the CLI's environment, which
    every tool it runs would inherit (and /proc/<pid>/environ would show)."""
    # No hooks from the workspace's `.github/hooks/`: the CLI would run their commands itself, outside any tool call.
    workdir = str(directory or backend.workdir)
    options: dict[str, Any] = {"streaming": True, "working_directory": workdir, "enable_file_hooks": False}
    if backend.model:
        options["model"] = backend.model
    if backend.provider is not None:
        options["provider"] = provider_config(backend.provider)
    if github_token is not None:
        options["github_token"] = github_token
    if backend.system_prompt:
        options["system_message"] = {"mode": backend.system_prompt_mode, "content": backend.system_prompt}
    if backend.reasoning_effort:
        options["reasoning_effort"] = backend.reasoning_effort
    servers = mcp.for_copilot(backend.mcp_servers)
    if servers:
        options["mcp_servers"] = servers
    return options


def provider_config(provider: CopilotProvider) -> dict[str, Any]:
    """The SDK's ProviderConfig (snake_case keys; it writes the wire form)."""
    config: dict[str, Any] = {"type": provider.type, "base_url": provider.base_url}
    if provider.api_key is not None:
        config["api_key"] = provider.api_key.get_secret_value()
    if provider.bearer_token is not None:
        config["bearer_token"] = provider.bearer_token.get_secret_value()
    if provider.wire_api is not None:
        config["wire_api"] = provider.wire_api
    if provider.azure_api_version is not None:
        config["azure"] = {"api_version": provider.azure_api_version}
    return config
