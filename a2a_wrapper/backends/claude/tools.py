"""A call Claude Code's PreToolUse hook holds, as the shield reads it: Claude's tool names as ACP's tool kinds.

The kinds are the ones claude-agent-acp reports for the same tools in its `tool_call` updates, so a call is classed
the same whether it reaches the shield through the hook or through an ACP permission request. A tool not listed
is `other`, which the shield denies unless a rule says otherwise; an MCP tool (`mcp__<server>__<tool>`) is `mcp`,
named `<server>_<tool>` for `tools:` rules as on the other backends.
"""

from typing import Any

from a2a_wrapper.backends.acp.translate import ToolState, permission
from a2a_wrapper.events import Permission, ToolKind

CLAUDE_KINDS: dict[str, ToolKind] = {
    "Bash": "execute",
    "Read": "read",
    "Write": "edit",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Glob": "search",
    "Grep": "search",
    "ToolSearch": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "TodoWrite": "think",
}
_MCP = "mcp__"


def hook_permission(call: dict[str, Any]) -> Permission:
    """`{id, sessionID, callID, tool, args}` (the hook's post, with the gate's id) as a Permission."""
    tool = str(call.get("tool") or "")
    arguments = call.get("args") if isinstance(call.get("args"), dict) else {}
    kind: ToolKind = CLAUDE_KINDS.get(tool, "other")
    title = tool
    if tool.startswith(_MCP):
        kind, title = "mcp", tool[len(_MCP) :].replace("__", "_", 1)
    state = ToolState(str(call.get("callID") or ""), kind, title, raw_input=dict(arguments or {}))
    return permission(str(call["id"]), state, [])
