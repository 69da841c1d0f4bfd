"""Copilot session events and permission requests → StreamEvents, for one turn of one session.

Works on the wire form (`event.data.to_dict()`: camelCase keys), as the notes and the CLI's JSONL show it.
"""

import json
from collections.abc import Iterable
from typing import Any

from a2a_wrapper.events import (
    Done,
    FileDiff,
    Permission,
    StreamEvent,
    Text,
    Thought,
    ToolCall,
    ToolKind,
    ToolResult,
    Usage,
)

_OUTPUT_SUMMARY = 2000

# Copilot permission kind -> the kind the shield classes (shield/classes.py KIND_CLASSES). The one table:
# any other Copilot kind (memory, custom-tool, hook, workflow, extension-*) is `other`, denied unless a rule
# says otherwise; its name stays the event's `tool` when no tool name comes with it.
PERMISSION_KINDS: dict[str, ToolKind] = {
    "shell": "execute",
    "write": "write",
    "read": "read",
    "mcp": "mcp",
    "url": "fetch",
}

# Copilot tool name -> the tool kind shown on A2A (display only: the permission request is what is decided).
TOOL_KINDS: dict[str, ToolKind] = {
    "bash": "execute",
    "read_bash": "execute",
    "write_bash": "execute",
    "stop_bash": "execute",
    "list_bash": "execute",
    "view": "read",
    "create": "edit",
    "edit": "edit",
    "grep": "search",
    "glob": "search",
    "web_fetch": "fetch",
    "ask_user": "question",
    "task": "delegate",
    "read_agent": "delegate",
    "write_agent": "delegate",
    "list_agents": "delegate",
    "skill": "read",
    "report_intent": "think",
}


def permission_kind(copilot_kind: str) -> ToolKind:
    return PERMISSION_KINDS.get(copilot_kind, "other")


# Tools of the bash family that only read, list or stop shells an earlier (decided) bash call started: at the
# pre-tool hook they are the agent's own state, not new commands (their arguments hold no command to check).
_SHELL_BOOKKEEPING = frozenset({"read_bash", "list_bash", "stop_bash"})
# The hook's tool -> the argument that holds its command (a shell's input is typed into a running shell).
_COMMAND_ARGUMENTS = {"bash": "command", "write_bash": "input"}
# The hook's tool -> the permission kind the CLI asks it as: one call looks the same to the shield and on A2A
# whichever seam saw it. Other tools go by their display kind (TOOL_KINDS).
_HOOK_PERMISSIONS = {
    "bash": "shell",
    "write_bash": "shell",
    "create": "write",
    "edit": "write",
    "view": "read",
    "web_fetch": "url",
}


def tool_kind(tool: str) -> ToolKind:
    return TOOL_KINDS.get(tool, "other")


def call_key(tool: str, arguments: Any) -> str:
    """A tool call by what it does: the pre-tool hook names no call id, only the tool and its arguments."""
    return json.dumps([tool, arguments], sort_keys=True, default=str)


class Translator:
    def __init__(self, mcp_servers: Iterable[str] = ()) -> None:
        self._mcp_prefixes = tuple(f"{name}-" for name in mcp_servers)  # the CLI names MCP tools `<server>-<tool>`
        self._tools: dict[str, tuple[str, dict[str, Any]]] = {}  # toolCallId -> (tool name, arguments)
        self._emitted: dict[str, str] = {}  # answer text emitted per message, to complete it from the final one
        self._error: str | None = None
        self._aborted = False
        self.prompt_seen = False  # our prompt's echo (user.message): events before it belong to an earlier turn

    def feed(self, kind: str, data: dict[str, Any]) -> list[StreamEvent]:
        if kind == "user.message":
            self.prompt_seen = True
        if kind == "session.error":  # also before our prompt's echo: a send the CLI refused
            self._error = str(data.get("message") or data.get("errorType") or "unknown error")
            return []
        if not self.prompt_seen and not (kind == "session.idle" and self._error):
            return []
        handler = getattr(self, "_on_" + kind.replace(".", "_"), None)
        return list(handler(data)) if handler is not None else []

    # the answer

    def _on_assistant_message_delta(self, data: dict[str, Any]) -> list[StreamEvent]:
        delta = data.get("deltaContent")
        if data.get("parentToolCallId") or not isinstance(delta, str) or not delta:
            return []  # a subagent's words are not the answer
        message = str(data.get("messageId", ""))
        self._emitted[message] = self._emitted.get(message, "") + delta
        return [Text(delta=delta)]

    def _on_assistant_message(self, data: dict[str, Any]) -> list[StreamEvent]:
        """The final message is authoritative: emit whatever deltas never arrived."""
        final, message = data.get("content"), str(data.get("messageId", ""))
        if data.get("parentToolCallId") or not isinstance(final, str):
            return []
        emitted = self._emitted.get(message, "")
        if final.startswith(emitted) and len(final) > len(emitted):
            self._emitted[message] = final
            return [Text(delta=final[len(emitted) :])]
        return []

    def _on_assistant_reasoning_delta(self, data: dict[str, Any]) -> list[StreamEvent]:
        delta = data.get("deltaContent")
        return [Thought(delta=delta)] if isinstance(delta, str) and delta else []

    def _on_assistant_usage(self, data: dict[str, Any]) -> list[StreamEvent]:
        return [
            Usage(
                input_tokens=int(data.get("inputTokens") or 0),
                output_tokens=int(data.get("outputTokens") or 0),
                reasoning_tokens=int(data.get("reasoningTokens") or 0),
                cost=float(data.get("cost") or 0.0),
            )
        ]

    # tools

    def _on_tool_execution_start(self, data: dict[str, Any]) -> list[StreamEvent]:
        call_id, tool = str(data.get("toolCallId", "")), str(data.get("toolName", "unknown"))
        arguments = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        assert isinstance(arguments, dict)
        self._tools[call_id] = (tool, arguments)
        call = ToolCall(
            id=call_id,
            tool=tool,
            kind=tool_kind(tool),
            status="running",
            title=str(data.get("toolTitle") or tool),
            arguments=arguments,
            locations=tuple(str(arguments[key]) for key in ("path",) if arguments.get(key)),
        )
        return [call]

    def _on_tool_execution_complete(self, data: dict[str, Any]) -> list[StreamEvent]:
        call_id = str(data.get("toolCallId", ""))
        tool, arguments = self._tools.get(call_id, ("unknown", {}))
        result, kind = data.get("result") or {}, tool_kind(tool)
        if not data.get("success"):
            error = data.get("error") or {}
            output = str(error.get("message") or result.get("content") or "the tool failed")
            return [ToolResult(id=call_id, tool=tool, kind=kind, status="failed", output=output[:_OUTPUT_SUMMARY])]
        output = str(result.get("content") or "")[:_OUTPUT_SUMMARY]
        diffs: tuple[FileDiff, ...] = ()
        if kind == "edit":  # a view's detail is also written as a diff
            diffs = file_diffs(data.get("fileEdits") or [], arguments, str(result.get("detailedContent") or ""))
        return [ToolResult(id=call_id, tool=tool, kind=kind, status="completed", output=output, diffs=diffs)]

    # requests

    def permission(self, permission_id: str, request: dict[str, Any]) -> Permission:
        """A permission request (wire form) as the shield sees it."""
        copilot_kind = str(request.get("kind", "unknown"))
        tool = self._tools.get(str(request.get("toolCallId", "")), (None, {}))[0]
        command = url = None
        paths: tuple[str, ...] = ()
        if copilot_kind == "shell":
            command = str(request.get("fullCommandText", ""))
            urls = request.get("possibleUrls") or []
            url = str(urls[0]) if urls else None
        elif copilot_kind == "write":
            paths = (str(request.get("fileName", "")),)
        elif copilot_kind == "read":
            paths = (str(request.get("path", "")),)
        elif copilot_kind == "url":
            url = str(request.get("url", ""))
        elif copilot_kind == "mcp":
            tool = f"{request.get('serverName', '')}/{request.get('toolName', '')}"
        name = tool or str(request.get("toolName") or copilot_kind)
        kind = permission_kind(copilot_kind)
        return Permission(id=permission_id, kind=kind, tool=name, paths=paths, command=command, url=url, raw=request)

    def started(self, call_id: str) -> tuple[str, dict[str, Any]] | None:
        """The tool and arguments of a call the CLI announced (`tool.execution_start`)."""
        return self._tools.get(call_id)

    def hook_call(self, permission_id: str, tool: str, arguments: Any) -> Permission:
        """A call the CLI's pre-tool hook holds before it runs (its tool and arguments), as the shield sees it."""
        args = arguments if isinstance(arguments, dict) else {}
        command = str(args.get(_COMMAND_ARGUMENTS[tool]) or "") if tool in _COMMAND_ARGUMENTS else None
        url = str(args["url"]) if tool == "web_fetch" and args.get("url") else None
        paths = (str(args["path"]),) if args.get("path") else ()
        kind, raw = self._hook_kind(tool), {"toolArgs": args}
        return Permission(id=permission_id, kind=kind, tool=tool, paths=paths, command=command, url=url, raw=raw)

    def _hook_kind(self, tool: str) -> ToolKind:
        if tool.startswith(self._mcp_prefixes):
            return "mcp"
        if tool in _HOOK_PERMISSIONS:
            return permission_kind(_HOOK_PERMISSIONS[tool])
        return "think" if tool in _SHELL_BOOKKEEPING else tool_kind(tool)

    # the end

    def _on_abort(self, data: dict[str, Any]) -> list[StreamEvent]:
        self._aborted = True
        return []

    def _on_session_idle(self, data: dict[str, Any]) -> list[StreamEvent]:
        return [self.done(aborted=bool(data.get("aborted")))]

    def done(self, aborted: bool = False) -> Done:
        if aborted or self._aborted:
            return Done(outcome="canceled", sentence="The turn was aborted.")
        if self._error is not None:
            return Done(outcome="failed", sentence=f"Copilot reported an error: {self._error}")
        return Done(outcome="completed")


def file_diffs(edits: list[dict[str, Any]], arguments: dict[str, Any], detail: str) -> tuple[FileDiff, ...]:
    """The unified diff a create or edit reports, one per changed path."""
    paths = [str(edit.get("path")) for edit in edits if isinstance(edit, dict) and edit.get("path")]
    if not paths and arguments.get("path"):
        paths = [str(arguments["path"])]
    if not paths or "diff --git" not in detail:
        return ()
    blocks = ["diff --git" + block for block in detail.split("diff --git")[1:]]
    if len(blocks) == len(paths):
        pairs = zip(paths, blocks, strict=True)
        return tuple(FileDiff(path=path, diff=block.strip("\n") + "\n") for path, block in pairs)
    if len(paths) == 1:
        return (FileDiff(path=paths[0], diff=detail.strip("\n") + "\n"),)
    return ()
