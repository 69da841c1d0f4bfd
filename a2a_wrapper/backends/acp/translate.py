"""ACP `session/update` kinds → StreamEvents, with the latest state of every tool call of a session.

ACP names no tool, only a ToolKind and a display title (the command, the model's intention or the tool's
name, depending on the agent). So the kind stands for the tool: `tool` of a ToolCall or Permission is the
kind from TOOL_KINDS (an MCP tool's is its title), and the title is kept as display text only; a `tools:`
rule still matches by the kind's common name (`bash` for execute), as on the other backends.
"""

import difflib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from acp.schema import (
    AgentPlanUpdate,
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    PromptResponse,
    StopReason,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
)

from a2a_wrapper.events import (
    Done,
    FileDiff,
    Permission,
    Plan,
    PlanStep,
    StreamEvent,
    Text,
    Thought,
    ToolCall,
    ToolKind,
    ToolResult,
    Usage,
)

_OUTPUT_SUMMARY = 2000

# ACP ToolKind -> the tool kind shown on A2A and classed by the shield (shield/classes.py KIND_CLASSES).
# `switch_mode` and `other` class as `other` there, which the shield denies unless a rule says otherwise:
# a mode switch may turn the agent's own asking off. A missing or unknown kind is `other` too.
TOOL_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "search": "search",
    "edit": "edit",
    "delete": "delete",
    "move": "move",
    "execute": "execute",
    "think": "think",
    "fetch": "fetch",
    "switch_mode": "switch_mode",
    "other": "other",
}

_PATH_KEYS = ("path", "file_path", "filePath", "file")
_COMMAND_KEYS = ("command", "cmd")
_STATUSES: dict[str, Literal["pending", "running"]] = {"pending": "pending", "in_progress": "running"}
_STOPS: dict[str, tuple[Literal["completed", "failed", "canceled"], str]] = {
    "end_turn": ("completed", ""),
    "cancelled": ("canceled", "The turn was canceled."),
    "refusal": ("failed", "The agent refused to continue this turn."),
    "max_tokens": ("failed", "The agent stopped: the model reached its token limit."),
    "max_turn_requests": ("failed", "The agent stopped: it reached its limit of model requests for one turn."),
}

Verdict = Literal["allow", "deny", "cancelled"]


def tool_kind(acp_kind: str | None) -> ToolKind:
    return TOOL_KINDS.get(acp_kind or "", "other")


@dataclass
class ToolState:
    """What is known of one tool call: the latest of each field any update carried."""

    id: str
    kind: ToolKind = "other"
    title: str = ""
    status: str = "pending"
    raw_input: dict[str, Any] = field(default_factory=dict)
    locations: tuple[str, ...] = ()
    shown: tuple[str, str] | None = None  # (status, input) last reported, so repeats are not

    def update(self, call: ToolCallUpdate | ToolCallStart | ToolCallProgress) -> None:
        if call.kind:
            self.kind = tool_kind(call.kind)
        if call.title:
            self.title = call.title
        if call.status:
            self.status = call.status
        if isinstance(call.raw_input, dict) and call.raw_input:
            self.raw_input = {**self.raw_input, **call.raw_input}
        if call.locations:
            self.locations = tuple(location.path for location in call.locations)


class ToolCache:
    """The tool calls of one session; a permission request is read merged with what came before it.

    ACP has no MCP tool kind: a tool of kind `other` titled after a configured MCP server (`<server>_<tool>`,
    `<server>-<tool>`, `<server>/<tool>`) is kind `mcp`, as the same call is with the other backends.
    """

    def __init__(self, mcp_servers: tuple[str, ...] = ()) -> None:
        self._calls: dict[str, ToolState] = {}
        self._mcp_prefixes = tuple(f"{name}{separator}" for name in mcp_servers for separator in "_-/")

    def update(self, call: ToolCallUpdate | ToolCallStart | ToolCallProgress) -> ToolState:
        state = self._calls.setdefault(call.tool_call_id, ToolState(call.tool_call_id))
        state.update(call)
        return self._classed(state)

    def merged(self, call: ToolCallUpdate) -> ToolState:
        """The request's tool call over the cached one (pitfall: requests may carry `rawInput: {}`)."""
        cached = self._calls.get(call.tool_call_id, ToolState(call.tool_call_id))
        merged = ToolState(
            cached.id, cached.kind, cached.title, cached.status, dict(cached.raw_input), cached.locations
        )
        merged.update(call)
        return self._classed(merged)

    def _classed(self, state: ToolState) -> ToolState:
        if state.kind == "other" and self._mcp_prefixes and state.title.startswith(self._mcp_prefixes):
            state.kind = "mcp"
        return state


def translate(update: Any, tools: ToolCache) -> list[StreamEvent]:
    """One `session/update` of a running turn; kinds without a StreamEvent give nothing."""
    kind = getattr(update, "session_update", None)
    if kind == "agent_message_chunk":
        return [Text(delta=update.content.text)] if isinstance(update.content, TextContentBlock) else []
    if kind == "agent_thought_chunk":
        return [Thought(delta=update.content.text)] if isinstance(update.content, TextContentBlock) else []
    if kind in ("tool_call", "tool_call_update"):
        return _tool_events(update, tools.update(update))
    if isinstance(update, AgentPlanUpdate):
        steps = tuple(PlanStep(text=e.content, status=e.status, priority=e.priority) for e in update.entries)
        return [Plan(steps=steps)]
    return []  # user_message_chunk (replays), commands, modes, session info, usage_update (see usage_cost)


def usage_cost(update: Any) -> float | None:
    """The session's cost so far, when a `usage_update` carries one."""
    if isinstance(update, UsageUpdate) and update.cost is not None:
        return update.cost.amount
    return None


def _tool_events(call: ToolCallStart | ToolCallProgress, state: ToolState) -> list[StreamEvent]:
    if state.status in ("completed", "failed"):
        if state.shown and state.shown[0] in ("completed", "failed"):
            return []
        state.shown = (state.status, "")
        status: Literal["completed", "failed"] = "completed" if state.status == "completed" else "failed"
        output, diffs = _summary(call), _diffs(call)
        return [ToolResult(id=state.id, tool=state.kind, kind=state.kind, status=status, output=output, diffs=diffs)]
    shown = (state.status, repr(sorted(state.raw_input.items())))
    if state.shown == shown:
        return []
    state.shown = shown
    return [
        ToolCall(
            id=state.id,
            tool=state.kind,
            kind=state.kind,
            status=_STATUSES.get(state.status, "pending"),
            title=state.title,
            arguments=state.raw_input,
            locations=state.locations,
        )
    ]


def _summary(call: ToolCallStart | ToolCallProgress) -> str:
    texts = [
        item.content.text
        for item in call.content or ()
        if isinstance(item, ContentToolCallContent) and isinstance(item.content, TextContentBlock)
    ]
    text = "\n".join(texts) if texts else _raw_text(call.raw_output)
    return text[:_OUTPUT_SUMMARY]


# Where agents put the readable part of a structured rawOutput (copilot --acp: {"message", "code"}).
_TEXT_KEYS = ("output", "stdout", "stderr", "result", "message", "error", "text")


def _raw_text(raw: object) -> str:
    """rawOutput as text: a string as it is, the readable fields of an object, else its JSON (never a repr)."""
    if raw is None or isinstance(raw, str):
        return raw or ""
    if isinstance(raw, dict):
        texts = [value for key in _TEXT_KEYS if isinstance(value := raw.get(key), str) and value]
        if texts:
            return "\n".join(texts)
    return json.dumps(raw, ensure_ascii=False, default=str)


def _diffs(call: ToolCallStart | ToolCallProgress) -> tuple[FileDiff, ...]:
    return tuple(
        FileDiff(path=item.path, diff=unified_diff(item.path, item.old_text, item.new_text))
        for item in call.content or ()
        if isinstance(item, FileEditToolCallContent)
    )


def unified_diff(path: str, old: str | None, new: str) -> str:
    """A unified diff of one file; no old text is a new file."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a/{path.lstrip('/')}",
        tofile=f"b/{path.lstrip('/')}",
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def permission(permission_id: str, call: ToolState, options: list[PermissionOption]) -> Permission:
    """A permission request as the shield reads it; input the agent left out stays out (decided by class)."""
    raw = call.raw_input
    command = next((raw[k] for k in _COMMAND_KEYS if isinstance(raw.get(k), str) and raw[k].strip()), None)
    url = raw.get("url") if isinstance(raw.get("url"), str) and raw["url"].strip() else None
    named = tuple(str(raw[k]) for k in _PATH_KEYS if isinstance(raw.get(k), str) and raw[k])
    paths = tuple(dict.fromkeys(named + call.locations))
    described = {
        "toolCallId": call.id,
        "title": call.title,
        "kind": call.kind,
        "rawInput": raw,
        "locations": list(call.locations),
        "options": [{"optionId": o.option_id, "kind": o.kind, "name": o.name} for o in options],
    }
    return Permission(
        id=permission_id,
        kind=call.kind,
        tool=call.title if call.kind == "mcp" else call.kind,  # an MCP tool's name, for `tools:` rules
        paths=paths,
        command=command if call.kind == "execute" else None,
        url=url if call.kind == "fetch" else None,
        raw=described,
    )


def chosen_option(options: list[PermissionOption], verdict: Verdict) -> str | None:
    """The agent's own option id for a one-time allow or reject; None: answer `cancelled`.

    Never an `*_always` option (the agent would remember it beyond this request). An allow without an
    `allow_once` option is a deny; a deny without `reject_once` is a cancel, which the agent reads as no.
    """
    wanted = {"allow": "allow_once", "deny": "reject_once"}.get(verdict)
    if verdict == "allow" and not any(o.kind == "allow_once" for o in options):
        wanted = "reject_once"
    return next((o.option_id for o in options if o.kind == wanted), None)


def ending(response: PromptResponse, cost: float) -> list[StreamEvent]:
    """The prompt's result: its usage, then the end of the turn."""
    events: list[StreamEvent] = []
    if response.usage is not None:
        usage = response.usage
        events.append(
            Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                reasoning_tokens=usage.thought_tokens or 0,
                cost=cost,
            )
        )
    events.append(done(response.stop_reason))
    return events


def done(stop_reason: StopReason | str) -> Done:
    outcome, sentence = _STOPS.get(
        stop_reason, ("failed", f"The agent stopped for a reason ACP does not know: {stop_reason}.")
    )
    return Done(outcome=outcome, sentence=sentence)
