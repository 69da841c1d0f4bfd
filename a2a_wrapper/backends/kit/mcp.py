"""One MCP shape (config.McpServer) mapped to each backend's own format."""

from typing import Any

from a2a_wrapper.config.backends import McpServer


def for_opencode(servers: dict[str, McpServer]) -> dict[str, Any]:
    """OpenCode config keys: `mcp` entries, plus `tools` switches when a server exposes only some tools."""
    mcp: dict[str, Any] = {}
    tools: dict[str, bool] = {}
    for name, server in servers.items():
        if server.command is not None:
            mcp[name] = {"type": "local", "command": server.command, "environment": server.env}
        else:
            mcp[name] = {"type": "remote", "url": server.url, "headers": server.headers}
        mcp[name]["enabled"] = server.enabled
        if "*" not in server.tools:  # OpenCode names an MCP tool `<server>_<tool>`
            tools[f"{name}_*"] = False
            tools.update({f"{name}_{tool}": True for tool in server.tools})
    config: dict[str, Any] = {"mcp": mcp} if mcp else {}
    if tools:
        config["tools"] = tools
    return config


def for_copilot(servers: dict[str, McpServer]) -> dict[str, Any]:
    """`mcp_servers` of github-copilot-sdk's create_session / resume_session."""
    mapped: dict[str, Any] = {}
    for name, server in servers.items():
        if not server.enabled:
            continue
        if server.command is not None:
            mapped[name] = {
                "type": "local",
                "command": server.command[0],
                "args": server.command[1:],
                "env": server.env,
                "tools": server.tools,
            }
        else:
            mapped[name] = {"type": "http", "url": server.url, "headers": server.headers, "tools": server.tools}
    return mapped


def for_acp(servers: dict[str, McpServer]) -> list[dict[str, Any]]:
    """`mcpServers` of ACP's session/new and session/load (wire form; name/value lists for env and headers)."""
    mapped: list[dict[str, Any]] = []
    for name, server in servers.items():
        if not server.enabled:
            continue
        if server.command is not None:
            mapped.append(
                {
                    "name": name,
                    "command": server.command[0],
                    "args": server.command[1:],
                    "env": [{"name": key, "value": value} for key, value in server.env.items()],
                }
            )
        else:
            mapped.append(
                {
                    "type": "http",
                    "name": name,
                    "url": server.url,
                    "headers": [{"name": key, "value": value} for key, value in server.headers.items()],
                }
            )
    return mapped
