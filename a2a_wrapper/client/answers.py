"""A task paused in input-required: what the person is asked, and how their line becomes the reply's parts.

An approval request (the card's `urn:a2a-wrapper:approvals:v1` extension, see approvals.py) is answered
with a data part naming the approval and the option; a question, or any other pause, with the text typed.
"""

from dataclasses import dataclass
from typing import Any

from a2a.helpers import get_data_parts, new_data_part, new_text_part
from a2a.types import Part, TaskStatus

from a2a_wrapper.client.text import as_text, short
from a2a_wrapper.client.view import text_of

# The letters and words a person may type, per option of an approval request.
CHOICES = {
    "allow_once": ("y", "yes", "once"),
    "allow_context": ("a", "always"),
    "deny": ("n", "no", "d", "deny"),
}


@dataclass(frozen=True)
class Request:
    lines: tuple[str, ...]  # shown before the prompt
    prompt: str
    approval_id: str | None = None  # None: any non-empty text answers
    options: tuple[str, ...] = ()
    tool: dict[str, Any] | None = None  # an approval's tool: `{kind, name, paths, command, url}`


def request_of(status: TaskStatus) -> Request:
    for data in get_data_parts(status.message.parts):
        if isinstance(data, dict) and data.get("type") == "approval_request":
            return _approval(data.get("approval") or {})
        if isinstance(data, dict) and data.get("type") == "question":
            question = data.get("question") or {}
            offered = [str(o.get("label", o) if isinstance(o, dict) else o) for o in question.get("options") or []]
            lines = [f"[question] {question.get('text', '')}"] + (
                [f"  options: {', '.join(offered)}"] if offered else []
            )
            return Request(tuple(lines), "answer: ")
    return Request((f"[input] {text_of(status.message.parts) or 'The agent asks for input.'}",), "answer: ")


def _approval(approval: dict[str, Any]) -> Request:
    tool = approval.get("tool") or {}
    target = short(tool.get("command") or tool.get("url") or ", ".join(tool.get("paths") or []))
    offered = [option.get("id") for option in approval.get("options") or [] if isinstance(option, dict)]
    options = tuple(option for option in CHOICES if option in offered) or ("deny",)
    labels = {"allow_once": "y = allow once", "allow_context": "a = allow in this context", "deny": "n = deny"}
    where = f"class {approval.get('class', '?')}, rule {approval.get('rule', '?')}"
    lines = [f"[ask] {tool.get('name', '?')}: {target} ({where})"]
    if approval.get("reason"):
        lines.append(f"  {as_text(approval['reason'])}")
    prompt = f"{', '.join(labels[o] for o in options)}? "
    return Request(tuple(lines), prompt, str(approval.get("id", "")), options, tool if isinstance(tool, dict) else None)


def reply_parts(request: Request, line: str) -> list[Part] | None:
    """The parts that answer the request, or None when the line is not an answer (ask again)."""
    typed = line.strip()
    if request.approval_id is None:
        return [new_text_part(typed)] if typed else None
    option = next((o for o in request.options if typed.lower() in CHOICES[o]), None)
    if option is None:
        return None
    return [new_data_part({"approval": request.approval_id, "option": option})]
