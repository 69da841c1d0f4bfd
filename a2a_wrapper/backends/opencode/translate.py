"""OpenCode events → StreamEvents, for one turn of one session.

Keeps the roles of messages and the types of parts, so the echo of the user's own parts is ignored,
reasoning is told from the answer, and deltas that arrive before their part is announced are held.
"""

from collections.abc import Iterable
from typing import Any

from a2a_wrapper.events import (
    Done,
    FileDiff,
    Permission,
    Question,
    StreamEvent,
    Text,
    Thought,
    ToolCall,
    ToolKind,
    ToolResult,
    Usage,
)

_OUTPUT_SUMMARY = 2000

# OpenCode tool or permission name -> the tool kind shown on A2A (and classed by the shield). Unknown: "other".
TOOL_KINDS: dict[str, ToolKind] = {
    "bash": "execute",
    "edit": "edit",
    "write": "edit",
    "patch": "edit",
    "read": "read",
    "glob": "search",
    "grep": "search",
    "list": "search",
    "webfetch": "fetch",
    "websearch": "fetch",
    "external_directory": "external_directory",
    "task": "delegate",
    "todowrite": "think",
    "todoread": "think",
    "question": "question",
    "skill": "read",
    "invalid": "think",  # what OpenCode runs for a call to a tool it does not have: it only reports that
    "list_mcp_resources": "mcp",
    "list_mcp_resource_templates": "mcp",
    "read_mcp_resource": "mcp",
}
# A tool whose permission OpenCode asks under another name: a held call is named as OpenCode would ask it, so one
# rule (and the audit) names both.
_PERMISSION_NAMES = {"write": "edit", "patch": "edit", "apply_patch": "edit", "multiedit": "edit"}
_PATH_ARGUMENTS = ("filePath", "path")


def tool_kind(tool: str) -> ToolKind:
    return TOOL_KINDS.get(tool, "other")


class Translator:
    def __init__(self, mcp_servers: Iterable[str] = ()) -> None:
        self._mcp_prefixes = tuple(f"{name}_" for name in mcp_servers)  # OpenCode names MCP tools `<server>_<tool>`
        self._roles: dict[str, str] = {}  # messageID -> role
        self._parts: dict[str, dict[str, Any]] = {}  # partID -> {type, messageID}
        self._held: dict[str, list[str]] = {}  # deltas of parts not yet announced
        self._emitted: dict[str, str] = {}  # text emitted per part, to complete it from the final part
        self._tool_status: dict[str, str] = {}
        self._workdirs: dict[str, str] = {}  # callID -> bash `workdir`: its permission request does not carry it
        self._error: tuple[str, str] | None = None  # (error name, sentence)
        self._prompt_id: str | None = None  # the user message this turn sent

    def _kind(self, tool: str) -> ToolKind:
        return "mcp" if tool.startswith(self._mcp_prefixes) else tool_kind(tool)

    @property
    def prompt_seen(self) -> bool:
        return self._prompt_id is not None

    def recover(self, messages: list[dict[str, Any]]) -> list[StreamEvent]:
        """After a gap in the event stream: what the stored answer to our prompt holds that we never saw."""
        events: list[StreamEvent] = []
        for message in messages:
            info = message.get("info") or {}
            if info.get("role") != "assistant" or info.get("parentID") != self._prompt_id:
                continue
            self._roles[info["id"]] = "assistant"
            if info.get("error"):
                self._on_session_error({"error": info["error"]})
            for part in message.get("parts") or []:
                events += self._on_message_part_updated({"part": part})
        return [*events, self.done()]

    def feed(self, event: dict[str, Any]) -> list[StreamEvent]:
        props = event.get("properties") or {}
        handler = getattr(self, "_on_" + event.get("type", "").replace(".", "_"), None)
        if handler is None:
            return []
        if event.get("child") and event["type"] not in ("permission.asked", "question.asked"):
            return [] if event["type"] != "message.part.updated" else self._child_part(props)
        return list(handler(props))

    # messages and parts

    def _on_message_updated(self, props: dict[str, Any]) -> list[StreamEvent]:
        info = props.get("info") or {}
        if info.get("id") and info.get("role"):
            self._roles[info["id"]] = info["role"]
            if info["role"] == "user" and self._prompt_id is None:
                self._prompt_id = info["id"]
        return self._release_held()

    def _on_message_part_updated(self, props: dict[str, Any]) -> list[StreamEvent]:
        part = props.get("part") or {}
        part_id = part.get("id")
        if not part_id:
            return []
        self._parts[part_id] = {"type": part.get("type"), "messageID": part.get("messageID")}
        events = self._release_held()
        kind = part.get("type")
        if kind in ("text", "reasoning") and self._is_assistant(part_id):
            final = part.get("text") if (part.get("time") or {}).get("end") else None
            if isinstance(final, str):
                events += self._complete(part_id, kind, final)
        elif kind == "tool" and self._is_assistant(part_id):
            events += self._tool(part)
        elif kind == "step-finish" and self._is_assistant(part_id):
            events.append(_usage(part))
        return events

    def _on_message_part_delta(self, props: dict[str, Any]) -> list[StreamEvent]:
        part_id, delta = props.get("partID"), props.get("delta")
        if not part_id or not isinstance(delta, str) or props.get("field", "text") != "text":
            return []
        if part_id not in self._parts or self._role_of(part_id) is None:
            self._held.setdefault(part_id, []).append(delta)
            return []
        return self._delta(part_id, delta)

    def _delta(self, part_id: str, delta: str) -> list[StreamEvent]:
        if not self._is_assistant(part_id):
            return []
        kind = self._parts[part_id]["type"]
        if kind == "text":
            self._emitted[part_id] = self._emitted.get(part_id, "") + delta
            return [Text(delta=delta)]
        if kind == "reasoning":
            return [Thought(delta=delta)]
        return []

    def _complete(self, part_id: str, kind: str, final: str) -> list[StreamEvent]:
        """A finished part's text is authoritative: emit whatever deltas never arrived."""
        if kind != "text":
            return []
        emitted = self._emitted.get(part_id, "")
        if final.startswith(emitted) and len(final) > len(emitted):
            self._emitted[part_id] = final
            return [Text(delta=final[len(emitted) :])]
        return []

    def _release_held(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for part_id in [p for p in self._held if p in self._parts and self._role_of(p) is not None]:
            for delta in self._held.pop(part_id):
                events += self._delta(part_id, delta)
        return events

    def _role_of(self, part_id: str) -> str | None:
        return self._roles.get(self._parts[part_id].get("messageID") or "")

    def _is_assistant(self, part_id: str) -> bool:
        return self._role_of(part_id) == "assistant"

    # tools

    def _tool(self, part: dict[str, Any]) -> list[StreamEvent]:
        state = part.get("state") or {}
        status = state.get("status", "pending")
        call_id = part.get("callID") or part["id"]
        if self._tool_status.get(call_id) == status:
            return []
        self._tool_status[call_id] = status
        arguments = state.get("input") or {}
        if arguments.get("workdir"):
            self._workdirs[call_id] = str(arguments["workdir"])
        if status == "pending" and not arguments:
            return []  # announced before its arguments; the `running` update follows
        return [self._tool_event(call_id, part.get("tool", "unknown"), state, arguments)]

    def _tool_event(self, call_id: str, tool: str, state: dict[str, Any], arguments: dict[str, Any]) -> StreamEvent:
        kind, status = self._kind(tool), state.get("status", "pending")
        if status in ("pending", "running"):
            locations = tuple(str(v) for k, v in arguments.items() if k in _PATH_ARGUMENTS and v)
            title = state.get("title") or tool
            return ToolCall(
                id=call_id, tool=tool, kind=kind, status=status, title=title, arguments=arguments, locations=locations
            )
        if status == "completed":
            output = str(state.get("output") or "")[:_OUTPUT_SUMMARY]
            diffs = _diffs(arguments, state.get("metadata") or {})
            return ToolResult(id=call_id, tool=tool, kind=kind, status="completed", output=output, diffs=diffs)
        error = str(state.get("error") or "")[:_OUTPUT_SUMMARY]
        return ToolResult(id=call_id, tool=tool, kind=kind, status="failed", output=error)

    def _child_part(self, props: dict[str, Any]) -> list[StreamEvent]:
        part = props.get("part") or {}
        return self._tool(part) if part.get("type") == "tool" else []

    # requests

    def _on_permission_asked(self, props: dict[str, Any]) -> list[StreamEvent]:
        metadata = props.get("metadata") or {}
        kind = props.get("permission", "unknown")
        patterns = tuple(str(p) for p in props.get("patterns") or ())
        command = metadata.get("command") if kind == "bash" else None
        url = metadata.get("url") if kind == "webfetch" else None
        paths: tuple[str, ...] = ()
        if kind in ("edit", "read", "external_directory", "glob", "grep", "list"):
            paths = tuple(str(p) for p in metadata.get("directories") or ()) or patterns
            if metadata.get("filepath"):
                paths = (str(metadata["filepath"]),)
        call_id = (props.get("tool") or {}).get("callID") or ""
        workdir = (metadata.get("workdir") or self._workdirs.get(call_id)) if kind == "bash" else None
        return [
            Permission(
                id=props["id"],
                kind=self._kind(kind),
                tool=kind,
                paths=paths,
                command=command,
                url=url,
                raw=props,
                workdir=workdir,
            )
        ]

    def hook_call(self, props: dict[str, Any]) -> Permission:
        """A call the tool hook holds before it runs (`{id, tool, sessionID, callID, args}`), as the shield sees it."""
        tool = str(props.get("tool") or "unknown")
        arguments = props.get("args") if isinstance(props.get("args"), dict) else {}
        assert isinstance(arguments, dict)
        name = _PERMISSION_NAMES.get(tool, tool)
        shell = tool == "bash"
        command = str(arguments.get("command") or "") if shell else None  # no command is an empty one: denied
        workdir = str(arguments["workdir"]) if shell and arguments.get("workdir") else None
        url = str(arguments["url"]) if tool == "webfetch" and arguments.get("url") else None
        paths = tuple(str(arguments[key]) for key in _PATH_ARGUMENTS if arguments.get(key))
        return Permission(
            id=str(props["id"]),
            kind=self._kind(name),
            tool=name,
            paths=paths,
            command=command,
            url=url,
            raw=props,
            workdir=workdir,
        )

    def _on_question_asked(self, props: dict[str, Any]) -> list[StreamEvent]:
        questions = props.get("questions") or []
        text = "\n".join(str(q.get("question", "")) for q in questions)
        options = tuple(str(o.get("label")) for q in questions for o in q.get("options") or ())
        return [Question(id=props["id"], text=text, options=options)]

    # the end

    def _on_session_error(self, props: dict[str, Any]) -> list[StreamEvent]:
        error = props.get("error") or {}
        data = error.get("data") or {}
        self._error = (error.get("name", "Error"), str(data.get("message") or error.get("name") or "unknown"))
        return []

    def _on_session_idle(self, props: dict[str, Any]) -> list[StreamEvent]:
        return [self.done()]

    def done(self) -> Done:
        if self._error is None:
            return Done(outcome="completed")
        name, sentence = self._error
        if name == "MessageAbortedError":
            return Done(outcome="canceled", sentence="The turn was aborted.")
        return Done(outcome="failed", sentence=f"OpenCode reported {name}: {sentence}")


def _usage(part: dict[str, Any]) -> Usage:
    tokens = part.get("tokens") or {}
    return Usage(
        input_tokens=int(tokens.get("input") or 0),
        output_tokens=int(tokens.get("output") or 0),
        reasoning_tokens=int(tokens.get("reasoning") or 0),
        cost=float(part.get("cost") or 0.0),
    )


def _diffs(arguments: dict[str, Any], metadata: dict[str, Any]) -> tuple[FileDiff, ...]:
    """The change an edit or write made, when OpenCode reports one (`metadata.diff`, a unified diff)."""
    diff = metadata.get("diff")
    path = arguments.get("filePath") or arguments.get("path")
    if not diff or not path:
        return ()
    return (FileDiff(path=str(path), diff=str(diff)),)


# The event types a turn reads (Translator.feed's handlers): the event stream delivers no others, so a session's
# status, diff and summary updates (7 of a trivial turn's ~20 events) wake no turn.
TRANSLATED = frozenset(
    name.removeprefix("_on_").replace("_", ".") for name in vars(Translator) if name.startswith("_on_")
)
