"""Configs written for the Node `a2a-opencode` and `a2a-copilot` wrappers (camelCase `agentCard`, `server`, and an
`opencode` or `copilot` section), translated.

Keys that have no meaning here are dropped with a warning naming them, so a migrated config loads unchanged and the
user learns what it no longer does. Empty strings are the Node wrappers' way of saying "not set".
"""

import logging
import re
from typing import Any

log = logging.getLogger(__name__)

_MODE_ALIASES = {"text": "text/plain", "json": "application/json", "file": "application/octet-stream"}
_IGNORED = {
    "agentCard": {"protocolVersion", "streaming", "pushNotifications", "stateTransitionHistory"},
    "server": set(),
    "opencode": {"contextFile", "contextPrompt"},
    "copilot": {"contextFile", "contextPrompt", "streaming", "cliUrl"},
    "session": {"titlePrefix", "reuseByContext", "cleanupInterval"},
    "features": {
        "autoAnswerQuestions",
        "streamArtifactChunks",
        "enablePollingFallback",
        "trackUsage",
    },
    "timeouts": {"pollingInterval", "healthCheck"},
}
_IGNORED_SECTIONS = {"events", "memory", "subAgents", "configDir", "customAgents"}
_COMMON_SECTIONS = {"agentCard", "server", "mcp", "session", "timeouts", "logging", "features"}
_NODE_COPILOT_MODEL = "claude-sonnet-4.5"  # the a2a-copilot default when `copilot.model` is left out
_ARG_TOKEN = re.compile(r"\$(\w+)")  # a2a-copilot replaced `$NAME` in stdio args; unknown names stayed as written


def is_node_config(raw: dict[str, Any]) -> bool:
    return "agentCard" in raw or "opencode" in raw or "copilot" in raw


def translate_node_config(raw: dict[str, Any]) -> dict[str, Any]:
    """Map a Node a2a-opencode or a2a-copilot config onto this project's sections."""
    flavour = "copilot" if "copilot" in raw else "opencode"
    _warn_ignored(raw, flavour)
    result: dict[str, Any] = {"card": _card(dict(raw.get("agentCard", {}))), "server": _server(raw.get("server", {}))}
    if flavour == "copilot":
        result["backend"] = _copilot_backend(raw.get("copilot", {}))
        if "mcp" in raw:
            result["backend"]["mcp_servers"] = {name: _copilot_mcp(name, server) for name, server in raw["mcp"].items()}
        # a2a-copilot passed no permission handler, and Copilot denies gated tools without one: keep denying.
        result["auto_approve"] = False
    else:
        result["backend"] = _opencode_backend(raw.get("opencode", {}))
        if "mcp" in raw:
            result["backend"]["opencode_config"] = {"mcp": raw["mcp"]}
        # The Node wrapper approved everything unless told otherwise; keep what the user had.
        result["auto_approve"] = raw.get("features", {}).get("autoApprovePermissions", True)
    if "session" in raw and "ttl" in raw["session"]:
        result["sessions"] = {"ttl": _seconds(raw["session"]["ttl"])}
    if "timeouts" in raw and "prompt" in raw["timeouts"]:
        result["timeouts"] = {"turn": _seconds(raw["timeouts"]["prompt"])}
    if "logging" in raw:
        result["logging"] = dict(raw["logging"])
    for key in set(raw) - _COMMON_SECTIONS - {flavour} - _IGNORED_SECTIONS:
        result[key] = raw[key]  # left for validation to name as unknown
    return result


def _seconds(milliseconds: Any) -> Any:
    if isinstance(milliseconds, int | float) and not isinstance(milliseconds, bool):
        return milliseconds / 1000
    return milliseconds  # left for validation to name


def _card(card: dict[str, Any]) -> dict[str, Any]:
    for dropped in _IGNORED["agentCard"]:
        card.pop(dropped, None)
    for key in ("defaultInputModes", "defaultOutputModes"):
        if key in card:
            card[key] = [_MODE_ALIASES.get(mode, mode) for mode in card[key]]
    return card


def _server(server: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"port": server.get("port", 3000)}  # the Node wrapper's default port
    if "hostname" in server:
        result["host"] = server["hostname"]
    if "advertiseHost" in server:
        scheme = server.get("advertiseProtocol", "http")
        result["advertise_url"] = f"{scheme}://{server['advertiseHost']}:{result['port']}"
    known = {"port", "hostname", "advertiseHost", "advertiseProtocol"}
    result.update({k: v for k, v in server.items() if k not in known})
    return result


def _renamed(section: dict[str, Any], flavour: str, renames: dict[str, str]) -> dict[str, Any]:
    return {
        renames.get(key, key): value
        for key, value in section.items()
        if key not in _IGNORED[flavour] and value != ""  # the Node defaults are empty strings meaning "not set"
    }


def _opencode_backend(opencode: dict[str, Any]) -> dict[str, Any]:
    renames = {
        "baseUrl": "base_url",
        "projectDirectory": "workdir",
        "systemPrompt": "system_prompt",
        "systemPromptMode": "system_prompt_mode",
    }
    return {"kind": "opencode", **_renamed(opencode, "opencode", renames)}


def _copilot_backend(copilot: dict[str, Any]) -> dict[str, Any]:
    renames = {
        "githubToken": "github_token",
        "workspaceDirectory": "workdir",
        "systemPrompt": "system_prompt",
        "systemPromptMode": "system_prompt_mode",
    }
    # a2a-copilot took an unset workspace from WORKSPACE_DIR; `${...}` is resolved by the config loader.
    result: dict[str, Any] = {"kind": "copilot", "model": _NODE_COPILOT_MODEL, "workdir": "${WORKSPACE_DIR:-workspace}"}
    result |= _renamed(copilot, "copilot", renames)
    provider = result.get("provider")
    if isinstance(provider, dict):
        result["provider"] = _copilot_provider(provider)
    return result


def _copilot_provider(provider: dict[str, Any]) -> dict[str, Any]:
    renames = {"baseUrl": "base_url", "apiKey": "api_key", "bearerToken": "bearer_token", "wireApi": "wire_api"}
    result = {renames.get(key, key): value for key, value in provider.items() if key != "azure"}
    azure = provider.get("azure")
    if isinstance(azure, dict) and "apiVersion" in azure:
        result["azure_api_version"] = azure["apiVersion"]
    return result


def _copilot_mcp(name: str, server: Any) -> Any:
    """An a2a-copilot MCP entry (`type` stdio | http | sse) in this project's one MCP shape."""
    if not isinstance(server, dict):
        return server  # left for validation to name
    entry = {key: value for key, value in server.items() if key not in ("type", "command", "args")}
    kind = server.get("type")
    if kind == "stdio":
        args = [_ARG_TOKEN.sub(r"${\1:-$\1}", arg) if isinstance(arg, str) else arg for arg in server.get("args", [])]
        entry["command"] = [server.get("command"), *args]
    elif kind == "sse":
        log.warning("Node a2a-copilot config: MCP server %s is SSE; it is reached as streamable HTTP here", name)
    elif kind != "http":
        entry["type"] = kind  # left for validation to name
    return entry


def _warn_ignored(raw: dict[str, Any], flavour: str) -> None:
    dropped = [section for section in _IGNORED_SECTIONS if section in raw]
    for section, keys in _IGNORED.items():
        if section in ("opencode", "copilot") and section != flavour:
            continue
        given: dict[str, Any] = raw[section] if isinstance(raw.get(section), dict) else {}
        dropped += [f"{section}.{key}" for key in keys if given.get(key, "") != ""]
    if flavour == "copilot" and "autoApprovePermissions" in (raw.get("features") or {}):
        dropped.append("features.autoApprovePermissions")  # a2a-copilot never had it; tools stay denied
    if dropped:
        log.warning(
            "Node a2a-%s config: these keys have no effect here and were ignored: %s",
            flavour,
            ", ".join(sorted(dropped)),
        )
