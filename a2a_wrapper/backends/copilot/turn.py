"""One Copilot turn: the prompt sent, session events translated, tool calls, permission and user-input requests held
for answers.

The SDK calls our handlers while the turn runs: the CLI's pre-tool hook for every tool call before it runs (the CLI
asks permission only for what it thinks needs it), permission requests, and `ask_user` questions. Each becomes a
`Permission` or `Question` event and waits until the executor answers it with `reply` or `answer`. A call the hook
allowed runs without a permission request (the CLI asks none after an allow); should one come anyway, it is answered
with the hook's decision, not decided and audited again.
"""

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol

from copilot import CopilotSession
from copilot.generated.rpc import PermissionDecisionApproveOnce, PermissionDecisionReject
from copilot.generated.session_events import SessionEvent, SessionEventType

from a2a_wrapper.backends.base import Batch, Prompt, Session
from a2a_wrapper.backends.copilot.prompt import message_of
from a2a_wrapper.backends.copilot.translate import Translator, call_key
from a2a_wrapper.backends.kit.stream import as_is, batches
from a2a_wrapper.events import Done, Question, StreamEvent

log = logging.getLogger(__name__)

Decision = PermissionDecisionApproveOnce | PermissionDecisionReject
_ABORT_GRACE = 5.0
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
        self._queue: asyncio.Queue[StreamEvent] = asyncio.Queue()
        self._translator = Translator(host.mcp_servers)
        self._sdk: CopilotSession | None = None
        self._waiting: dict[str, asyncio.Future[Any]] = {}  # permission or question id -> its answer
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
            text, attachments = message_of(self._prompt)
            try:
                await self._sdk.send(text, attachments=attachments or None)  # type: ignore[arg-type]
            except Exception as exc:  # the SDK raises JsonRpcError, ProcessExitedError, RuntimeError, OSError
                self._finished = True
                yield (Done(outcome="failed", sentence=f"Copilot did not take the message: {exc}"),)
                return
            async for batch in batches(self._queue, as_is):
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
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self._queue.put_nowait(event)
        try:
            return await future
        finally:
            self._waiting.pop(request_id, None)

    def _release(self, sentence: str) -> None:
        """Every request still waiting is denied (a question: left unanswered)."""
        for request_id, future in list(self._waiting.items()):
            if not future.done():
                future.set_result(
                    None if request_id.startswith(QUESTION_PREFIX) else PermissionDecisionReject(feedback=sentence)
                )

    # answers from the executor

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        answer = PermissionDecisionApproveOnce() if decision == "allow" else PermissionDecisionReject(feedback=reason)
        self._settle(permission_id, answer)

    async def answer(self, question_id: str, text: str | None) -> None:
        self._settle(question_id, text)

    def _settle(self, request_id: str, value: Any) -> None:
        future = self._waiting.get(request_id)
        if future is None or future.done():
            log.info("session %s: %s is not waiting for an answer", self._session.id, request_id)
            return
        future.set_result(value)

    async def abort(self) -> None:
        """Abort the running turn and wait (bounded) until the CLI says the session is idle."""
        if self._sdk is None or self._finished:
            return
        self._release("The turn was canceled.")
        idle = asyncio.Event()
        stop_watching = self._sdk.on(lambda event: idle.set() if event.type is SessionEventType.SESSION_IDLE else None)
        try:
            await self._sdk.abort()
            async with asyncio.timeout(_ABORT_GRACE):
                await idle.wait()
        except TimeoutError:
            log.warning("session %s was still busy %.0f s after abort", self._session.id, _ABORT_GRACE)
        except Exception as exc:  # a CLI that is gone has nothing left to abort
            log.warning("session %s: abort failed: %s", self._session.id, exc)
        finally:
            stop_watching()
