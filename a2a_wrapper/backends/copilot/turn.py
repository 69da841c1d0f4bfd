"""One Copilot turn: the prompt sent, session events translated, tool calls, permission and user-input requests held
for answers.

The SDK calls our handlers while the turn runs: the CLI's pre-tool hook for every tool call before it runs (the CLI
asks permission only for what it thinks needs it), permission requests, and `ask_user` questions. Each becomes a
`Permission` or `Question` event and waits until the executor answers it with `reply` or `answer`. A call the hook
allowed runs without a permission request (the CLI asks none after an allow); should one come anyway, it is answered
with the hook's decision, not decided and audited again.
"""

import asyncio
import base64
import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, Literal, Protocol

from copilot import CopilotSession
from copilot.generated.rpc import PermissionDecisionApproveOnce, PermissionDecisionReject
from copilot.generated.session_events import SessionEvent, SessionEventType

from a2a_wrapper.backends.base import Batch, Prompt, Session
from a2a_wrapper.backends.copilot.translate import Translator, call_key
from a2a_wrapper.backends.kit.abort import wait_stopped
from a2a_wrapper.backends.kit.pending import PendingReplies
from a2a_wrapper.backends.kit.prompt_files import content_of, is_inline, name_of
from a2a_wrapper.backends.kit.stream import PacedQueue, as_is, batches
from a2a_wrapper.events import Done, Question, StreamEvent

log = logging.getLogger(__name__)

Decision = PermissionDecisionApproveOnce | PermissionDecisionReject
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/yaml")  # sent inline as text
# Event types the translator reads; the rest (the CLI emits dozens, many untyped) are not even decoded.
_READ = frozenset(
    {
        "user.message",
        "assistant.message_delta",
        "assistant.message",
        "assistant.reasoning_delta",
        "assistant.usage",
        "tool.execution_start",
        "tool.execution_complete",
        "session.error",
        "session.idle",
        "abort",
    }
)


HOOK_PREFIX = "hook_"
QUESTION_PREFIX = "q_"
# The CLI knows no "rejected" for a question (an error reaches the model as "unable to respond due to an error"):
# an unanswered question is answered with this sentence instead.
NOBODY_ANSWERED = "Nobody answered this question; go on without the answer, or stop and say what you need."


def unanswered() -> dict[str, Any]:
    return {"answer": NOBODY_ANSWERED, "wasFreeform": True}


def blocked(sentence: str) -> dict[str, str]:
    """The pre-tool hook's answer that stops a call; the model reads `Denied by preToolUse hook: <sentence>`."""
    return {"permissionDecision": "deny", "permissionDecisionReason": sentence}


class TurnHost(Protocol):
    @property
    def mcp_servers(self) -> list[str]: ...

    async def attach(self, session_id: str, turn: "CopilotTurn") -> CopilotSession: ...

    def detach(self, session_id: str, turn: "CopilotTurn") -> None: ...


class CopilotTurn:
    def __init__(self, host: TurnHost, session: Session, prompt: Prompt) -> None:
        self._host = host
        self._session = session
        self._prompt = prompt
        self._queue: PacedQueue[StreamEvent] = PacedQueue()
        self._translator = Translator(host.mcp_servers)
        self._sdk: CopilotSession | None = None
        self._waiting: PendingReplies[Any] = PendingReplies()  # a permission's Decision, a question's text
        self._decided: dict[str, Decision] = {}  # one tool call asking the same again (read: twice) is not re-asked
        self._hook_allowed: set[str] = set()  # calls (tool and arguments) the pre-tool hook let run
        self._closed = False  # nobody reads the events any more
        self._finished = False  # the CLI ended the turn (a Done was yielded)

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._run()

    async def _run(self) -> AsyncIterator[Batch]:
        self._sdk = await self._host.attach(self._session.id, self)  # SessionGone: nothing was sent
        unsubscribe = self._sdk.on(self._on_event)
        try:
            try:
                text, attachments = message_of(self._prompt)
                await self._sdk.send(text, attachments=attachments or None)  # type: ignore[arg-type]
            except Exception as exc:  # the SDK raises JsonRpcError, ProcessExitedError, RuntimeError, OSError
                self._finished = True
                yield (Done(outcome="failed", sentence=f"Copilot did not take the message: {exc}"),)
                return
            async with aclosing(batches(self._queue, as_is)) as stream:
                async for batch in stream:
                    self._finished = isinstance(batch[-1], Done)
                    yield batch
        finally:
            unsubscribe()
            self._closed = True
            self._release("The turn is over.")
            self._host.detach(self._session.id, self)

    def _on_event(self, event: SessionEvent) -> None:
        kind = event.raw_type or event.type.value
        if kind not in _READ:
            return
        for stream_event in self._translator.feed(kind, event.data.to_dict()):
            self._queue.put_nowait(stream_event)

    def backend_exited(self, sentence: str) -> None:
        self._release(sentence)
        self._queue.put_nowait(Done(outcome="failed", sentence=sentence))

    # requests from the CLI (through the backend's handlers)

    async def pre_tool_use(self, hook: dict[str, Any]) -> dict[str, str]:
        """The CLI's pre-tool hook: the call decided before it runs, as a permission request is. Only an allow lets
        it run; the SDK reads an exception as "no opinion" (the CLI then runs what it would not ask about), so a
        failure here blocks the call instead."""
        try:
            if self._closed:
                return blocked("No turn is running to decide this call; it did not run.")
            tool, arguments = str(hook.get("toolName") or "unknown"), hook.get("toolArgs")
            permission_id = HOOK_PREFIX + uuid.uuid4().hex
            decision = await self._wait(permission_id, self._translator.hook_call(permission_id, tool, arguments))
        except Exception:  # the boundary of one call
            log.exception("session %s: checking a tool call failed; it is blocked", self._session.id)
            return blocked("The wrapper could not check this tool call, so it did not run. Do not retry it.")
        if isinstance(decision, PermissionDecisionApproveOnce):
            self._hook_allowed.add(call_key(tool, arguments))
            return {"permissionDecision": "allow"}
        return blocked(decision.feedback or "The call was denied.")

    async def permission(self, request: dict[str, Any]) -> Decision:
        call = request.get("toolCallId")
        key = json.dumps(request, sort_keys=True, default=str) if call else ""
        if key in self._decided:
            return self._decided[key]
        started = self._translator.started(str(call))
        if started is not None and call_key(*started) in self._hook_allowed:
            return PermissionDecisionApproveOnce()  # decided (and audited) at the hook
        if self._closed:
            return PermissionDecisionReject(feedback="No turn is running to decide this request.")
        permission_id = "perm_" + uuid.uuid4().hex
        event = self._translator.permission(permission_id, request)
        decision: Decision = await self._wait(permission_id, event)
        if key:
            self._decided[key] = decision
        return decision

    async def question(self, request: dict[str, Any]) -> dict[str, Any]:
        choices = tuple(str(choice) for choice in request.get("choices") or ())
        question_id = QUESTION_PREFIX + uuid.uuid4().hex
        asked = Question(id=question_id, text=str(request.get("question", "")), options=choices)
        text = await self._wait(question_id, asked)
        if text is None:
            return unanswered()
        return {"answer": text, "wasFreeform": text not in choices}

    async def _wait(self, request_id: str, event: StreamEvent) -> Any:
        return await self._waiting.wait(request_id, lambda: self._queue.put_nowait(event))

    def _release(self, sentence: str) -> None:
        """Every request still waiting is denied (a question: left unanswered)."""
        denied = PermissionDecisionReject(feedback=sentence)
        self._waiting.settle_all(lambda request_id: None if request_id.startswith(QUESTION_PREFIX) else denied)

    # answers from the executor

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        answer = PermissionDecisionApproveOnce() if decision == "allow" else PermissionDecisionReject(feedback=reason)
        self._waiting.settle(permission_id, answer)

    async def answer(self, question_id: str, text: str | None) -> None:
        self._waiting.settle(question_id, text)

    async def abort(self) -> None:
        """Abort the running turn and wait (bounded) until the CLI says the session is idle."""
        if self._sdk is None or self._finished:
            return
        self._release("The turn was canceled.")
        idle = asyncio.Event()
        stop_watching = self._sdk.on(lambda event: idle.set() if event.type is SessionEventType.SESSION_IDLE else None)
        try:
            await self._sdk.abort()
            await wait_stopped(idle.wait(), self._session.id)
        except Exception as exc:  # a CLI that is gone has nothing left to abort
            log.warning("session %s: abort failed: %s", self._session.id, exc)
        finally:
            stop_watching()


def message_of(prompt: Prompt) -> tuple[str, list[dict[str, Any]]]:
    """What `session.send` takes: text files inline in the text, other inline files as blobs, links named."""
    texts = [prompt.text] if prompt.text else []
    blobs: list[dict[str, Any]] = []
    for file in prompt.files:
        name = name_of(file)
        if not is_inline(file):
            texts.append(f"Attached file {name} ({file.media_type}): {file.url}")
            continue
        body = content_of(file)
        if file.media_type.startswith(_TEXT_TYPES):
            texts.append(f'<file name="{name}" type="{file.media_type}">\n{body.decode(errors="replace")}\n</file>')
        else:
            data = base64.b64encode(body).decode()
            blobs.append({"type": "blob", "data": data, "mimeType": file.media_type, "displayName": name})
    return "\n\n".join(texts), blobs
