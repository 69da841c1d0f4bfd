"""How an ACP agent is started: its command (or the managed install of a known one), its own folders and small
environment under `<state_dir>/acp`, and the MCP servers each session gets."""

import os
import shutil
from pathlib import Path

from acp.schema import AcpMcpServer, EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from a2a_wrapper.backends import install as installer
from a2a_wrapper.backends.kit import mcp
from a2a_wrapper.backends.kit.isolation import config_folder, isolated_env, produce_folder
from a2a_wrapper.config.backends import AcpSettings

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def agent_home(state_dir: Path) -> Path:
    """Where the agent's HOME, XDG folders and TMPDIR live (`home`, `config`, `data`, `cache`, `state`, `tmp`)."""
    return state_dir / "acp"


def agent_env(settings: AcpSettings, state_dir: Path, wrapper_env: dict[str, str]) -> dict[str, str]:
    """The agent's environment, its config folder made anew and empty: whatever a run planted there is gone before
    the next start. It stays the agent's during a run (any ACP agent may write its settings there as it starts;
    the wrapper writes nothing there and loads nothing from it)."""
    home = agent_home(state_dir)
    env = isolated_env(home, wrapper_env) | settings.env
    produce_folder(config_folder(home), {})
    provider = settings.provider
    if provider is not None:  # the relay's URL and token when the wrapper relays it (sandbox/relayed_provider.py)
        env[provider.url_env] = provider.base_url
        if provider.api_key is not None:
            env[provider.key_env] = provider.api_key.get_secret_value()
    return env


def agent_command(command: list[str], env: dict[str, str]) -> list[str]:
    """`opencode` or `copilot` not on the PATH: the managed install of that backend (`a2a-wrap backends install`)."""
    program, *arguments = command
    if os.sep in program or program not in installer.PINNED or shutil.which(program, path=env.get("PATH")):
        return command
    return [str(installer.find_binary(program)), *arguments]


def mcp_servers(settings: AcpSettings) -> list[McpServer]:
    servers: list[McpServer] = []
    for server in mcp.for_acp(settings.mcp_servers):
        if server.get("type") == "http":
            headers = [HttpHeader(**header) for header in server["headers"]]
            servers.append(HttpMcpServer(type="http", name=server["name"], url=server["url"], headers=headers))
        else:
            env = [EnvVariable(**variable) for variable in server["env"]]
            servers.append(McpServerStdio(name=server["name"], command=server["command"], args=server["args"], env=env))
    return servers
