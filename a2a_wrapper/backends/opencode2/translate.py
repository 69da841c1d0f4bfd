"""OpenCode 2 events → StreamEvents, for one turn of one session.

Events arrive as the event stream shapes them (`{type, properties}`, `properties` being the event's `data`; see
events.py). 2.x streams true deltas and keys a tool's whole life by its call id, so nothing is held back here.
"""

from typing import Any

from a2a_wrapper.events import (
    Done,
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

# OpenCode 2 tool or permission action -> the tool kind shown on A2A (and classed by the shield). Unknown: "other".
TOOL_KINDS: dict[str, ToolKind] = {
    "shell": "execute",
    "execute": "execute",  # Code Mode: refused by the permission rules, so never offered
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
    "subagent": "delegate",
    "todowrite": "think",
    "question": "question",
    "skill": "read",
    "invalid": "think",
}
# A tool whose permission OpenCode asks under another action: a held call is named as OpenCode would ask it, so one
# rule (and the audit) names both.
_PERMISSION_NAMES = {"write": "edit", "patch": "edit", "apply_patch": "edit", "multiedit": "edit"}
_PATH_ARGUMENTS = ("filePath", "path")
_PATH_ACTIONS = ("edit", "read", "external_directory", "glob", "grep", "list")
_ENDS = {
    "session.execution.succeeded": "completed",
    "session.execution.failed": "failed",
    "session.execution.interrupted": "canceled",
}


def tool_kind(tool: str) -> ToolKind:
    return TOOL_KINDS.get(tool, "other")


class Translator:
    def __init__(self) -> None:
        self._tools: dict[str, str] = {}  # call id -> tool name
        self._arguments: dict[str, dict[str, Any]] = {}  # call id -> its input
        self._error: str | None = None  # the last failure OpenCode reported in this turn

    def feed(self, event: dict[str, Any]) -> list[StreamEvent]:
        props = event.get("properties") or {}
        kind = event.get("type", "")
        if kind in _ENDS:
            return [] if event.get("child") else [self._done(_ENDS[kind], props)]
        handler = getattr(self, "_on_" + kind.replace(".", "_"), None)
        if handler is None:
            return []
        if event.get("child") and kind in ("session.text.delta", "session.reasoning.delta", "session.step.ended"):
            return []  # a subagent's answer is its parent's tool result, not the turn's answer
        return list(handler(props))

    # text

    def _on_session_text_delta(self, props: dict[str, Any]) -> list[StreamEvent]:
        delta = props.get("delta")
        return [Text(delta=delta)] if isinstance(delta, str) and delta else []

    def _on_session_reasoning_delta(self, props: dict[str, Any]) -> list[StreamEvent]:
        delta = props.get("delta")
        return [Thought(delta=delta)] if isinstance(delta, str) and delta else []

    # tools

    def _on_session_tool_input_started(self, props: dict[str, Any]) -> list[StreamEvent]:
        self._tools[str(props.get("id"))] = str(props.get("name") or "unknown")
        return []

    def _on_session_tool_called(self, props: dict[str, Any]) -> list[StreamEvent]:
        call_id = str(props.get("id"))
        tool = self._tools.get(call_id, "unknown")
        arguments = props.get("input") if isinstance(props.get("input"), dict) else {}
        assert isinstance(arguments, dict)
        self._arguments[call_id] = arguments
        locations = tuple(str(arguments[key]) for key in _PATH_ARGUMENTS if arguments.get(key))
        return [
            ToolCall(
                id=call_id,
                tool=tool,
                kind=tool_kind(tool),
                status="running",
                title=str(arguments.get("description") or tool),
                arguments=arguments,
                locations=locations,
            )
        ]

    def _on_session_tool_success(self, props: dict[str, Any]) -> list[StreamEvent]:
        call_id = str(props.get("id"))
        tool = self._tools.get(call_id, "unknown")
        output = "".join(str(c.get("text", "")) for c in props.get("content") or () if c.get("type") == "text")
        return [
            ToolResult(id=call_id, tool=tool, kind=tool_kind(tool), status="completed", output=output[:_OUTPUT_SUMMARY])
        ]

    def _on_session_tool_failed(self, props: dict[str, Any]) -> list[StreamEvent]:
        call_id = str(props.get("id"))
        tool = self._tools.get(call_id, "unknown")
        error = str((props.get("error") or {}).get("message") or "")[:_OUTPUT_SUMMARY]
        return [ToolResult(id=call_id, tool=tool, kind=tool_kind(tool), status="failed", output=error)]

    def _on_session_step_ended(self, props: dict[str, Any]) -> list[StreamEvent]:
        tokens = props.get("tokens") or {}
        return [
            Usage(
                input_tokens=int(tokens.get("input") or 0),
                output_tokens=int(tokens.get("output") or 0),
                reasoning_tokens=int(tokens.get("reasoning") or 0),
                cost=float(props.get("cost") or 0.0),
            )
        ]

    def _on_session_step_failed(self, props: dict[str, Any]) -> list[StreamEvent]:
        self._error = _sentence(props.get("error"))
        return []

    # requests

    def _on_permission_asked(self, props: dict[str, Any]) -> list[StreamEvent]:
        action = str(props.get("action") or "unknown")
        resources = tuple(str(r) for r in props.get("resources") or ())
        call_id = str((props.get("source") or {}).get("id") or "")
        arguments = self._arguments.get(call_id, {})
        shell = action == "shell"
        return [
            Permission(
                id=str(props["id"]),
                kind=tool_kind(action),
                tool=action,
                paths=resources if action in _PATH_ACTIONS else (),
                command=" ".join(resources) if shell else None,
                url=resources[0] if action == "webfetch" and resources else None,
                raw=props,
                workdir=str(arguments["workdir"]) if shell and arguments.get("workdir") else None,
            )
        ]

    def hook_call(self, props: dict[str, Any]) -> Permission:
        """A call the tool hook holds before it runs (`{id, tool, sessionID, callID, args}`), as the shield sees it."""
        tool = str(props.get("tool") or "unknown")
        arguments = props.get("args") if isinstance(props.get("args"), dict) else {}
        assert isinstance(arguments, dict)
        name = _PERMISSION_NAMES.get(tool, tool)
        shell = tool == "shell"
        return Permission(
            id=str(props["id"]),
            kind=tool_kind(name),
            tool=name,
            paths=tuple(str(arguments[key]) for key in _PATH_ARGUMENTS if arguments.get(key)),
            command=str(arguments.get("command") or "") if shell else None,  # no command is an empty one: denied
            url=str(arguments["url"]) if tool == "webfetch" and arguments.get("url") else None,
            raw=props,
            workdir=str(arguments["workdir"]) if shell and arguments.get("workdir") else None,
        )

    def _on_form_created(self, props: dict[str, Any]) -> list[StreamEvent]:
        """A question as a form: its fields' descriptions are the questions (a title is the question's header),
        their options the choices."""
        form = props.get("form") or {}
        fields = form.get("fields") or []
        text = "\n".join(str(f.get("description") or f.get("title") or "") for f in fields)
        options = tuple(str(o.get("label") or o.get("value")) for f in fields for o in f.get("options") or ())
        return [Question(id=str(form.get("id")), text=text, options=options)]

    # the end

    def _done(self, outcome: str, props: dict[str, Any]) -> Done:
        if outcome == "completed":
            return Done(outcome="completed")
        if outcome == "canceled":
            return Done(outcome="canceled", sentence="The turn was aborted.")
        sentence = _sentence(props.get("error")) or self._error or "unknown error"
        return Done(outcome="failed", sentence=f"OpenCode reported {sentence}")


def _sentence(error: Any) -> str | None:
    """`{type, message, status?}` as one sentence, or None when there is no error."""
    if not isinstance(error, dict):
        return None
    status = f" (status {error['status']})" if error.get("status") else ""
    return f"{error.get('type') or 'error'}{status}: {error.get('message') or 'no message'}"


# The event types a turn reads: the event stream delivers no others.
TRANSLATED = frozenset(
    {name.removeprefix("_on_").replace("_", ".") for name in vars(Translator) if name.startswith("_on_")} | set(_ENDS)
)
