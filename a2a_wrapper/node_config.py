"""Configs written for the Node `a2a-opencode` wrapper (camelCase `agentCard`, `server`, `opencode`), translated.

Keys that have no meaning here are dropped with a warning naming them, so a migrated config loads
unchanged and the user learns what it no longer does.
"""

import logging
from typing import Any

log = logging.getLogger(__name__)

_MODE_ALIASES = {"text": "text/plain", "json": "application/json", "file": "application/octet-stream"}
_IGNORED = {
    "agentCard": {"protocolVersion", "streaming", "pushNotifications", "stateTransitionHistory"},
    "server": set(),
    "opencode": {"contextFile", "contextPrompt"},
    "session": {"titlePrefix", "reuseByContext", "cleanupInterval"},
    "features": {"autoAnswerQuestions", "streamArtifactChunks", "enablePollingFallback"},
    "timeouts": {"pollingInterval", "healthCheck"},
}
_IGNORED_SECTIONS = {"events", "memory", "subAgents", "configDir"}


def is_node_config(raw: dict[str, Any]) -> bool:
    return "agentCard" in raw or "opencode" in raw


def translate_node_config(raw: dict[str, Any]) -> dict[str, Any]:
    """Map a Node a2a-opencode config onto this project's sections."""
    _warn_ignored(raw)
    card = dict(raw.get("agentCard", {}))
    server = raw.get("server", {})
    opencode = raw.get("opencode", {})
    result: dict[str, Any] = {"card": _card(card), "server": _server(server), "backend": _backend(opencode)}
    if "mcp" in raw:
        result["backend"]["opencode_config"] = {"mcp": raw["mcp"]}
    if "session" in raw and "ttl" in raw["session"]:
        result["sessions"] = {"ttl": _seconds(raw["session"]["ttl"])}
    if "timeouts" in raw and "prompt" in raw["timeouts"]:
        result["timeouts"] = {"turn": _seconds(raw["timeouts"]["prompt"])}
    if "logging" in raw:
        result["logging"] = dict(raw["logging"])
    features = raw.get("features", {})
    # The Node wrapper approved everything unless told otherwise; keep what the user had.
    result["auto_approve"] = features.get("autoApprovePermissions", True)
    unknown = set(raw) - {"agentCard", "server", "opencode", "mcp", "session", "timeouts", "logging", "features"}
    for key in unknown - _IGNORED_SECTIONS:
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


def _backend(opencode: dict[str, Any]) -> dict[str, Any]:
    renames = {
        "baseUrl": "base_url",
        "projectDirectory": "workdir",
        "systemPrompt": "system_prompt",
        "systemPromptMode": "system_prompt_mode",
    }
    result: dict[str, Any] = {"kind": "opencode"}
    for key, value in opencode.items():
        if key in _IGNORED["opencode"] or value == "":
            continue  # the Node wrapper's defaults are empty strings meaning "not set"
        result[renames.get(key, key)] = value
    return result


def _warn_ignored(raw: dict[str, Any]) -> None:
    dropped = [section for section in _IGNORED_SECTIONS if section in raw]
    for section, keys in _IGNORED.items():
        dropped += [f"{section}.{key}" for key in keys if key in raw.get(section, {})]
    if dropped:
        log.warning(
            "Node a2a-opencode config: these keys have no effect here and were ignored: %s", ", ".join(sorted(dropped))
        )
