"""Asking a person over A2A: the approval request a paused turn sends, and how an answer is read.

The request travels as a data part `{"type": "approval_request", ...}` in an `input-required` status; the
answer is a data part `{"approval": ID, "option": OPTION}` or one plain word: yes / no / always (any case).
Anything else asks again and never reaches the model. The card declares this as the extension below.
"""

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from a2a.types import Message
from google.protobuf.json_format import MessageToDict

from a2a_wrapper.events import Permission, Question

EXTENSION_URI = "urn:a2a-wrapper:approvals:v1"
EXTENSION_DESCRIPTION = (
    "A tool call that needs a person ends the request in input-required with a data part "
    '{"type":"approval_request","approval":{"id","tool":{kind,name,paths,command,url},"class","rule",'
    '"options":[allow_once|allow_context|deny],"expiresAt"}}; answer on the same task with a data part '
    '{"approval":ID,"option":OPTION} or the word yes, no or always. A question from the agent comes as '
    '{"type":"question","question":{"id","text","options"}} and any text answers it. An operator may answer '
    "instead, in the fleet's console, through the agent's operator endpoint (/operator/v1, the console's key); "
    "the first answer wins, a later one is refused with a sentence naming who answered."
)
Option = Literal["allow_once", "allow_context", "deny"]
OPTIONS: dict[Option, str] = {"allow_once": "Allow once", "allow_context": "Allow for this context", "deny": "Deny"}
WORDS: dict[str, Option] = {"yes": "allow_once", "no": "deny", "always": "allow_context"}
CONSOLE_ANSWERS = "Approvals of this agent are answered by an operator in the console."


@dataclass
class Pending:
    """What a paused turn waits for: a person's decision on a tool call, or an answer to a question."""

    request: Permission | Question
    reason: str  # why a person is asked (the rule's sentence)
    rule: str
    timeout: float  # seconds a person has to answer
    cls: str = ""  # the request's class, computed once by the gate; "" for a question
    id: str = field(default_factory=lambda: f"apr_{uuid.uuid4().hex[:16]}")
    asked_at: float = field(default_factory=lambda: datetime.now(UTC).timestamp())  # shown to people
    # when it was asked on the monotonic clock (the event loop's): the wait and the deadline are measured on it,
    # never on the wall clock, which NTP may slew or step while a person thinks
    asked_clock: float = field(default_factory=time.monotonic)

    @property
    def expires_at(self) -> float:
        """The deadline on the wall clock, as people are shown it."""
        return self.asked_at + self.timeout

    def waited(self) -> float:
        """Seconds since the person was asked."""
        return time.monotonic() - self.asked_clock

    def left(self) -> float:
        """Seconds until the deadline; 0 or less once it has passed."""
        return self.timeout - self.waited()

    def data(self) -> dict[str, Any]:
        expires = datetime.fromtimestamp(self.expires_at, UTC).isoformat()
        if isinstance(self.request, Question):
            question = {"id": self.id, "text": self.request.text, "options": list(self.request.options)}
            return {"type": "question", "question": {**question, "expiresAt": expires}}
        request = self.request
        tool = {"kind": request.kind, "name": request.tool, "paths": list(request.paths)}
        tool |= {k: v for k, v in (("command", request.command), ("url", request.url)) if v}
        options = [{"id": key, "label": label} for key, label in OPTIONS.items()]
        approval: dict[str, Any] = {"id": self.id, "tool": tool, "class": self.cls, "rule": self.rule}
        approval |= {"reason": self.reason, "options": options}
        return {"type": "approval_request", "approval": {**approval, "expiresAt": expires}}

    def sentence(self, caller_answers: bool = True) -> str:
        """What the person is asked; `caller_answers` False: an approval only an operator in the console answers."""
        if isinstance(self.request, Question):
            return f"The agent asks: {self.request.text}"
        how = "Answer yes (once), always (for this context) or no." if caller_answers else CONSOLE_ANSWERS
        return f"Approval needed: {self.reason} {how}"


@dataclass(frozen=True)
class Answer:
    option: Option | None  # for an approval
    text: str | None  # for a question


@dataclass(frozen=True)
class NotAnAnswer:
    sentence: str


def read_answer(message: Message, pending: Pending) -> Answer | NotAnAnswer:
    parts = [MessageToDict(part) for part in message.parts]
    data = [part["data"] for part in parts if isinstance(part.get("data"), dict)]
    text = " ".join(part["text"] for part in parts if isinstance(part.get("text"), str)).strip()
    if isinstance(pending.request, Question):
        answer = next((d.get("answer") for d in data if d.get("question") == pending.id), None) or text
        return Answer(None, str(answer)) if answer else NotAnAnswer("Answer with text.")
    for item in data:
        if "approval" not in item:
            continue
        if item["approval"] != pending.id:
            return NotAnAnswer(f"Approval {item['approval']!r} is unknown or expired; the pending one is {pending.id}.")
        if item.get("option") not in OPTIONS:
            return NotAnAnswer(f"Option {item.get('option')!r} is not one of {', '.join(OPTIONS)}.")
        return Answer(item["option"], None)
    word = WORDS.get(text.lower())
    if word is None:
        return NotAnAnswer("That is not an answer.")  # the request's own sentence follows it
    return Answer(word, None)
