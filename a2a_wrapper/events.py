"""StreamEvent: the one vocabulary every backend adapter translates its events into.

Events are built by keyword only (`Permission(id=..., kind=..., tool=...)`), so no adapter depends on the order
of fields. A tool's `kind` is a closed `ToolKind`: each adapter maps its backend's names onto it once, and
whatever it does not know becomes `other`, which the shield denies unless a rule allows it.
"""

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

# What a tool does, the same on every backend (ACP's ToolKind plus the kinds OpenCode and Copilot add):
# `edit` and `write` change a file (`write` is Copilot's permission for it), `move` and `delete` remove one,
# `think` is the agent's own bookkeeping (its todo list), `question` asks the person, `external_directory` is
# OpenCode's request for a folder outside the workspace, `delegate` runs a subagent, `switch_mode` changes the
# agent's mode (which may turn its own asking off), `other` is any other tool and anything an adapter does not know.
ToolKind = Literal[
    "read",
    "search",
    "think",
    "question",
    "external_directory",
    "edit",
    "write",
    "move",
    "delete",
    "execute",
    "fetch",
    "mcp",
    "delegate",
    "switch_mode",
    "other",
]
KINDS: tuple[ToolKind, ...] = get_args(ToolKind)


@dataclass(frozen=True, slots=True, kw_only=True)
class Text:
    """A delta of the answer."""

    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Thought:
    """A delta of reasoning; never part of the answer."""

    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool call announced or running; `tool` and `kind` mean what they mean on a Permission."""

    id: str
    tool: str
    kind: ToolKind
    status: Literal["pending", "running", "completed", "failed"]
    title: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    locations: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FileDiff:
    """A file the tool changed: its path and a unified diff of the change."""

    path: str
    diff: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """A tool call's end: its status, a summary of its output and the files it changed."""

    id: str
    tool: str
    kind: ToolKind
    status: Literal["completed", "failed"]
    output: str = ""
    diffs: tuple[FileDiff, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Permission:
    """The backend asks whether a tool call may run.

    `kind` is what the tool does, the same on every backend; the shield classes the request by it. `tool` is the
    tool's own name on its backend, as the audit shows it: OpenCode's permission name (`bash`, `edit`,
    `webfetch`; an MCP tool's `<server>_<tool>`), Copilot's tool name (`bash`, `create`, `view`; an MCP tool's
    `<server>/<tool>`, or `<server>-<tool>` at the pre-tool hook; the permission kind, e.g. `shell`, for a call
    it never announced), and on ACP, which names no tools, the kind itself (an MCP tool: its title). A rule's
    `tools:` pattern matches `tool` or the common name of `kind` (`bash` for execute, see shield/classes.py),
    so `tools: [bash]` means shell commands on every backend.
    """

    id: str
    kind: ToolKind
    tool: str
    paths: tuple[str, ...] = ()
    command: str | None = None
    url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    workdir: str | None = None  # where a shell command runs (OpenCode's bash `workdir`); None: the workspace


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    id: str
    text: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanStep:
    text: str
    status: Literal["pending", "in_progress", "completed"]
    priority: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """The agent's whole current plan (each event replaces the last)."""

    steps: tuple[PlanStep, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost=self.cost + other.cost,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    """The turn ended: `completed`, `failed` (with the backend's sentence) or `canceled`."""

    outcome: Literal["completed", "failed", "canceled"]
    sentence: str = ""


StreamEvent = Text | Thought | ToolCall | ToolResult | Permission | Question | Plan | Usage | Done


def coalesce(events: list[StreamEvent]) -> list[StreamEvent]:
    """Adjacent text deltas joined into one, and adjacent thought deltas likewise; order kept."""
    joined: list[StreamEvent] = []
    for event in events:
        previous = joined[-1] if joined else None
        if isinstance(event, Text) and isinstance(previous, Text):
            joined[-1] = Text(delta=previous.delta + event.delta)
        elif isinstance(event, Thought) and isinstance(previous, Thought):
            joined[-1] = Thought(delta=previous.delta + event.delta)
        else:
            joined.append(event)
    return joined
