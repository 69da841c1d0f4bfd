"""What the offline model answers: a reply plan derived from the conversation."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from a2a_wrapper.offline_model.directives import Directives, ToolCall, collapse, parse_directives

Message = Mapping[str, Any]
FinishReason = Literal["stop", "tool_calls"]

TITLE_PREFIX = "You are a title generator"
TITLE_TEXT = "Offline title"
EXCERPT_CHARS = 200
WORDS_PER_DELTA = 3
_WORD = re.compile(r"\s*\S+\s*")


@dataclass(frozen=True)
class ReplyPlan:
    content: tuple[str, ...] = ()
    reasoning: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    duration: float = 0.0
    error_status: int | None = None
    error_message: str = ""

    @property
    def text(self) -> str:
        return "".join(self.content)

    @property
    def finish_reason(self) -> FinishReason:
        return "tool_calls" if self.tool_calls else "stop"


TITLE_PLAN = ReplyPlan(content=(TITLE_TEXT,))


def split_words(text: str, per_delta: int = WORDS_PER_DELTA) -> tuple[str, ...]:
    """Split on word boundaries into pieces of `per_delta` words; the pieces join back to `text`."""
    words = _WORD.findall(text)
    return tuple("".join(words[i : i + per_delta]) for i in range(0, len(words), per_delta))


def split_even(text: str, pieces: int) -> tuple[str, ...]:
    """Split into `pieces` parts of near-equal length (fewer when `text` is shorter)."""
    size = len(text)
    bounds = [size * i // pieces for i in range(pieces + 1)]
    return tuple(text[a:b] for a, b in itertools.pairwise(bounds) if a < b)


def message_text(message: Message) -> str:
    """The text of a message whose content is a string, None, or a list of `{type: "text"}` parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_part_text(part) for part in content)
    return ""


def _part_text(part: object) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return str(part["text"])
    return ""


def is_title_request(messages: Sequence[Message], tools: Sequence[object] | None) -> bool:
    """OpenCode's session-title call: no tools and a title-generator system prompt."""
    return not tools and any(
        m.get("role") == "system" and message_text(m).lstrip().startswith(TITLE_PREFIX) for m in messages
    )


def error_message(status: int) -> str:
    return f"Offline model error {status} (requested by the prompt)"


def plan_reply(messages: Sequence[Message], tools: Sequence[object] | None = None) -> ReplyPlan:
    """Decide the reply from the directives in the last user message and the tool results after it.

    `tools` (the request's): a question goes to Copilot's `ask_user` when that is offered and `question` is not.
    """
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    found = parse_directives(message_text(messages[last_user]) if last_user >= 0 else "")
    reasoning = split_words(found.think)
    if found.error is not None:
        return ReplyPlan(duration=found.slow, error_status=found.error, error_message=error_message(found.error))
    results = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "tool")
    if results < len(found.tools):
        call = for_offered_tools(found.tools[results], tools)
        return ReplyPlan(reasoning=reasoning, tool_calls=(call,), duration=found.slow)
    if messages and messages[-1].get("role") == "tool":
        text = _tool_result_reply(messages)
    else:
        text = _answer(found, messages)
    per_delta = 1 if found.long is not None else WORDS_PER_DELTA
    return ReplyPlan(content=split_words(text, per_delta), reasoning=reasoning, duration=found.slow)


# The shell tool under the names agents offer it by, where none offers `bash` itself (OpenCode 2's, Gemini CLI's).
_SHELL_NAMES = ("shell", "run_shell_command")


def for_offered_tools(call: ToolCall, tools: Sequence[object] | None) -> ToolCall:
    """A call named as the agent offers it: a name offered in another case only (`bash` for Claude Code's `Bash`)
    in that case; `bash` as the agent's own shell tool (OpenCode 2's `shell`, Gemini CLI's `run_shell_command`) when
    it offers no `bash`; a `question` call as Copilot's `ask_user` (first question, option labels as choices) if only
    that is offered."""
    offered = {str((tool.get("function") or {}).get("name")) for tool in tools or () if isinstance(tool, Mapping)}
    if call.name not in offered:
        same = [name for name in offered if name.lower() == call.name.lower()]
        shell = [name for name in _SHELL_NAMES if name in offered] if call.name == "bash" else []
        if len(same) == 1 or shell:
            return ToolCall((same or shell)[0], call.arguments)
    if call.name != "question" or "question" in offered or "ask_user" not in offered:
        return call
    questions = json.loads(call.arguments).get("questions")
    first = questions[0] if isinstance(questions, list) and questions and isinstance(questions[0], Mapping) else {}
    choices = [str(o.get("label", "")) for o in first.get("options") or () if isinstance(o, Mapping)]
    arguments: dict[str, Any] = {"question": str(first.get("question", "")), "allow_freeform": True}
    if choices:
        arguments["choices"] = choices
    return ToolCall("ask_user", json.dumps(arguments))


def _answer(found: Directives, messages: Sequence[Message]) -> str:
    parts: list[str] = []
    if found.turns:
        users = sum(1 for m in messages if m.get("role") == "user")
        parts.append(f"This conversation holds {users} user messages.")
    if found.long is not None:
        parts.append(" ".join(f"word{i}" for i in range(1, found.long + 1)))
    if found.echo_system:
        system = next((m for m in messages if m.get("role") == "system"), None)
        parts.append(f"System prompt starts: {_excerpt(message_text(system)) if system else '(none)'}")
    if not parts:
        return f"Offline model reply: {found.text or '(empty)'}"
    return " ".join(part for part in parts if part)


def _tool_result_reply(messages: Sequence[Message]) -> str:
    result = messages[-1]
    return f"Tool {_tool_name(messages, result)} returned: {_excerpt(message_text(result))}"


def _tool_name(messages: Sequence[Message], result: Message) -> str:
    call_id = result.get("tool_call_id")
    for message in reversed(messages):
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and call.get("id") == call_id:
                return str((call.get("function") or {}).get("name", "unknown"))
    return str(result.get("name") or "unknown")


def _excerpt(text: str) -> str:
    return collapse(text)[:EXCERPT_CHARS].rstrip() or "(empty)"


def usage(messages: Sequence[Message], plan: ReplyPlan) -> dict[str, int]:
    """Deterministic token counts: prompt chars // 4 and reply words."""
    prompt = sum(len(message_text(m)) for m in messages) // 4
    produced = [plan.text, "".join(plan.reasoning), *(call.arguments for call in plan.tool_calls)]
    completion = len(" ".join(produced).split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
