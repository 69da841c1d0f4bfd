"""StreamEvent: the one vocabulary every backend adapter translates its events into."""

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class Text:
    """A delta of the answer."""

    delta: str


@dataclass(frozen=True, slots=True)
class Thought:
    """A delta of reasoning; never part of the answer."""

    delta: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    tool: str
    kind: str
    status: Literal["pending", "running", "completed", "failed"]
    title: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    locations: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FileDiff:
    """A file the tool changed: its path and a unified diff of the change."""

    path: str
    diff: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    id: str
    tool: str
    kind: str
    status: Literal["completed", "failed"]
    output: str = ""
    diffs: tuple[FileDiff, ...] = ()


@dataclass(frozen=True, slots=True)
class Permission:
    """The backend asks whether a tool call may run."""

    id: str
    kind: str
    tool: str
    paths: tuple[str, ...] = ()
    command: str | None = None
    url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    workdir: str | None = None  # where a shell command runs (OpenCode's bash `workdir`); None: the workspace


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    text: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PlanStep:
    text: str
    status: Literal["pending", "in_progress", "completed"]
    priority: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    """The agent's whole current plan (each event replaces the last)."""

    steps: tuple[PlanStep, ...]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cost + other.cost,
        )


@dataclass(frozen=True, slots=True)
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
            joined[-1] = Text(previous.delta + event.delta)
        elif isinstance(event, Thought) and isinstance(previous, Thought):
            joined[-1] = Thought(previous.delta + event.delta)
        else:
            joined.append(event)
    return joined
