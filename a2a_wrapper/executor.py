"""The a2a-sdk executor: one A2A request drives one backend turn, mapped through the TaskReporter."""

import asyncio
import logging
import time
from dataclasses import dataclass

from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Task, TaskState, TaskStatus

from a2a_wrapper.audit import AuditEntry, AuditLog
from a2a_wrapper.backends.base import Backend, Prompt, Turn
from a2a_wrapper.errors import BackendError, SessionGone
from a2a_wrapper.events import Done, Permission, Question, StreamEvent, Text, Thought, ToolCall, ToolResult, Usage
from a2a_wrapper.guard import GuardSettings
from a2a_wrapper.guard.turn import TurnGuard
from a2a_wrapper.permissions import Decision, PermissionPolicy
from a2a_wrapper.prompts import UnusableMessage, prompt_from_message
from a2a_wrapper.reporter import TaskReporter
from a2a_wrapper.sessions import SessionMap
from a2a_wrapper.shield import classify

log = logging.getLogger(__name__)

NO_PERSON = "No person is attached to answer questions yet; decide on your own and say what you assumed."
NO_APPROVALS = "No person can approve it over A2A yet, so it is denied. Do not retry it; do what you can without it."
SHUTTING_DOWN = "The agent shut down while this turn was running; the turn was aborted. Send the message again."


@dataclass(frozen=True, slots=True)
class TurnScope:
    context_id: str
    task_id: str
    caller: str  # the authenticated A2A caller; "" without auth


class TurnExecutor(AgentExecutor):
    def __init__(
        self,
        backend: Backend,
        sessions: SessionMap,
        policy: PermissionPolicy,
        audit: AuditLog,
        guard: GuardSettings,
        agent_name: str,
        turn_timeout: float,
    ) -> None:
        self._backend = backend
        self._sessions = sessions
        self._policy = policy
        self._audit = audit
        self._guard = guard
        self._agent_name = agent_name
        self._turn_timeout = turn_timeout
        self._active: set[Turn] = set()
        self._drained = asyncio.Event()
        self._drained.set()
        self._closing = False

    async def shutdown(self, grace: float = 10.0) -> None:
        """Abort running turns; each ends `failed` with a sentence. Waits for them at most `grace` s."""
        self._closing = True
        await asyncio.gather(*(_abort(turn) for turn in list(self._active)))
        try:
            async with asyncio.timeout(grace):
                await self._drained.wait()
        except TimeoutError:
            log.warning("%d turn(s) still running after %.0f s of shutdown", len(self._active), grace)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.message is not None
        current = context.current_task
        context_id = current.context_id if current else context.context_id
        assert context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        if current is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        try:
            prompt = prompt_from_message(context.message)
        except UnusableMessage as exc:
            await updater.reject(updater.new_agent_message([new_text_part(f"Message refused: {exc}.")]))
            return
        reporter = TaskReporter(updater, TurnGuard(self._guard))
        scope = TurnScope(context_id, context.task_id, _caller(context))
        async with self._sessions.hold(context_id):
            try:
                await self._run_turn(scope, prompt, reporter)
            except BackendError as exc:
                await reporter.finish(Done("failed", f"The backend could not run the turn: {exc}"))

    async def _run_turn(self, scope: TurnScope, prompt: Prompt, reporter: TaskReporter) -> None:
        context_id = scope.context_id
        for attempt in range(2):
            opened = await self._sessions.session_for(context_id)
            reporter.metadata.update({"session": opened.session.id, "sessionRecreated": opened.recreated})
            if attempt == 0:
                await reporter.working()
            try:
                await self._drive(self._backend.turn(opened.session, prompt), reporter, scope)
                return
            except SessionGone:
                if attempt:
                    raise
                log.info(
                    "session %s of context %s is gone from the backend; opening another", opened.session.id, context_id
                )
                self._sessions.forget(context_id)

    async def _drive(self, turn: Turn, reporter: TaskReporter, scope: TurnScope) -> None:
        self._active.add(turn)
        self._drained.clear()
        try:
            await self._follow(turn, reporter, scope)
        finally:
            self._active.discard(turn)
            if not self._active:
                self._drained.set()

    async def _follow(self, turn: Turn, reporter: TaskReporter, scope: TurnScope) -> None:
        try:
            async with asyncio.timeout(self._turn_timeout):
                async for event in turn:
                    if isinstance(event, Done):
                        await reporter.finish(Done("failed", SHUTTING_DOWN) if self._closing else event)
                        return
                    await self._handle(event, turn, reporter, scope)
            await reporter.finish(Done("failed", "The backend ended the turn without saying it was done."))
        except TimeoutError:
            await _abort(turn)
            await reporter.finish(
                Done("failed", f"The turn ran past its {self._turn_timeout:g} s limit and was aborted.")
            )
        except asyncio.CancelledError:
            await asyncio.shield(_abort(turn))
            raise

    async def _handle(self, event: StreamEvent, turn: Turn, reporter: TaskReporter, scope: TurnScope) -> None:
        match event:
            case Text():
                await reporter.text(event, more_ready=turn.more_ready)
            case Thought():
                reporter.thought(event)
            case Usage():
                reporter.usage(event)
            case ToolCall():
                await reporter.tool_call(event)
            case ToolResult():
                await reporter.tool_result(event)
            case Permission():
                await self._decide(event, turn, reporter, scope)
            case Question():
                await turn.answer(event.id, NO_PERSON)
                await reporter.question_declined(event, NO_PERSON)

    async def _decide(self, request: Permission, turn: Turn, reporter: TaskReporter, scope: TurnScope) -> None:
        """The policy decides; the backend gets the answer, the stream shows it, the audit log keeps it."""
        started = time.monotonic()
        decision = self._policy.decide(request)
        if decision.outcome == "ask":  # approvals over A2A are not wired yet: fail closed
            decision = Decision("deny", f"{decision.reason} {NO_APPROVALS}", decision.rule)
        await turn.reply(request.id, "allow" if decision.outcome == "allow" else "deny", decision.reason)
        await reporter.permission(request, decision)
        entry = AuditEntry(
            time=time.time(),
            agent=self._agent_name,
            context_id=scope.context_id,
            task_id=scope.task_id,
            caller=scope.caller,
            tool=request.tool,
            cls=classify(request),
            target=request.command or request.url or ", ".join(request.paths),
            decision=decision.outcome,
            rule=decision.rule,
            answered_by="rules",
            wait_ms=(time.monotonic() - started) * 1000,
        )
        await self._audit.record(entry)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        assert context.task_id is not None
        context_id = task.context_id if task else context.context_id
        assert context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        await updater.cancel(updater.new_agent_message([new_text_part("The task was canceled by the caller.")]))


def _caller(context: RequestContext) -> str:
    call = context.call_context
    return call.user.user_name if call is not None and call.user.is_authenticated else ""


async def _abort(turn: Turn) -> None:
    try:
        await turn.abort()
    except BackendError as exc:
        log.warning("abort failed: %s", exc)
