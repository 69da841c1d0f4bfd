"""The a2a-sdk executor: A2A requests drive backend turns, mapped through the TaskReporter.

A turn that needs a person (an `ask` decision, or a question from the agent) ends its request in
`input-required` and stays alive; the caller's next message on that task answers and resumes it. With
no answer by the deadline the executor sends the task a `deny` of its own, so the turn still ends.
"""

import asyncio
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field

from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import RequestHandler
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Role, SendMessageRequest, Task, TaskState, TaskStatus

from a2a_wrapper.backends.base import Backend, Prompt, Turn
from a2a_wrapper.errors import BackendError, SessionGone
from a2a_wrapper.events import (
    Done,
    Permission,
    Plan,
    Question,
    StreamEvent,
    Text,
    Thought,
    ToolCall,
    ToolResult,
    Usage,
)
from a2a_wrapper.frontend.metrics import AgentMetrics
from a2a_wrapper.frontend.prompts import UnusableMessage, prompt_from_message
from a2a_wrapper.frontend.reporter import META, TaskReporter
from a2a_wrapper.guard import GuardSettings, redact_value
from a2a_wrapper.guard.turn import TurnGuard
from a2a_wrapper.permissions.approvals import Answer, NotAnAnswer, Pending, read_answer
from a2a_wrapper.permissions.policy import PermissionPolicy
from a2a_wrapper.shield import Rule, Shield, classify
from a2a_wrapper.shield.decision import Decision
from a2a_wrapper.state.audit import AuditEntry, AuditLog
from a2a_wrapper.state.context_rules import ContextRules
from a2a_wrapper.state.sessions import ContextKey, SessionMap

log = logging.getLogger(__name__)

SHUTTING_DOWN = "The agent shut down while this turn was running; the turn was aborted. Send the message again."
EXPIRED = "No person answered in time, so the request is denied. Do not retry it; do what you can without it."
PERSON_DENIED = "A person denied this tool call. Do not retry it; do what you can without it."
CANCELED = "The task was canceled by the caller."
TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}


@dataclass(frozen=True, slots=True)
class TurnScope:
    context_id: str
    task_id: str
    caller: str  # the authenticated A2A caller; "" without auth
    call: ServerCallContext | None  # the request that started the turn (the deadline answers as it)

    @property
    def key(self) -> ContextKey:
        """The context's session, lock and rules are the caller's own: another caller's contextId reaches none."""
        return ContextKey(self.caller, self.context_id)


@dataclass(eq=False)
class LiveTurn:
    """A backend turn and its A2A side, alive across the requests of one task."""

    turn: Turn
    events: AsyncIterator[StreamEvent]
    reporter: TaskReporter
    scope: TurnScope
    prompt: Prompt
    budget: float  # seconds of running time left (time waiting for a person does not count)
    reopened: bool = False  # the backend had lost the session once already
    canceled: bool = False  # the caller canceled the task: nothing more is reported
    pending: Pending | None = None
    deadline: asyncio.Task[None] | None = field(default=None, repr=False)


class TurnExecutor(AgentExecutor):
    def __init__(
        self,
        backend: Backend,
        sessions: SessionMap,
        policy: PermissionPolicy,
        audit: AuditLog,
        context_rules: ContextRules,
        guard: GuardSettings,
        agent_name: str,
        turn_timeout: float,
        ask_timeout: float = 300.0,
        metrics: AgentMetrics | None = None,
    ) -> None:
        self._backend = backend
        self._sessions = sessions
        self._policy = policy
        self._audit = audit
        self._guard = guard
        self._agent_name = agent_name
        self._turn_timeout = turn_timeout
        self._ask_timeout = ask_timeout
        self._live: dict[str, LiveTurn] = {}  # by task id
        self._context_rules = context_rules  # a person's "always", per caller's context
        self._handler: RequestHandler | None = None
        self._drained = asyncio.Event()
        self._drained.set()
        self._closing = False
        self._metrics = metrics or AgentMetrics()

    def waiting(self) -> dict[str, int]:
        """Turns paused for a person, by what they wait for: an approval or an answer to a question."""
        paused = [live.pending.request for live in self._live.values() if live.pending is not None]
        return dict(Counter("question" if isinstance(r, Question) else "approval" for r in paused))

    def bind_handler(self, handler: RequestHandler) -> None:
        """The handler the deadline sends its own answer through."""
        self._handler = handler

    async def shutdown(self, grace: float = 10.0) -> None:
        """Abort live turns; running ones end `failed` with a sentence. Waits for them at most `grace` s."""
        self._closing = True
        waiting = [live for live in self._live.values() if live.pending is not None]
        for live in waiting:  # no request attached: the next start marks the task failed
            self._end(live)
            await self._reject(live, SHUTTING_DOWN)
        await asyncio.gather(*(_abort(live.turn) for live in [*self._live.values(), *waiting]))
        try:
            async with asyncio.timeout(grace):
                await self._drained.wait()
        except TimeoutError:
            log.warning("%d turn(s) still running after %.0f s of shutdown", len(self._live), grace)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.message is not None
        current = context.current_task
        if current is not None and current.status.state in TERMINAL:
            return  # queued behind the request that ended the task
        context_id = current.context_id if current else context.context_id
        assert context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        live = self._live.get(context.task_id)
        if live is not None and live.pending is not None:
            await self._resume(live, context.message, updater)
            return
        if current is None:
            task = Task(
                id=context.task_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
            await event_queue.enqueue_event(task)
        try:
            prompt = prompt_from_message(context.message)
        except UnusableMessage as exc:
            await updater.reject(updater.new_agent_message([new_text_part(f"Message refused: {exc}.")]))
            self._metrics.ended("rejected")
            return
        reporter = TaskReporter(updater, TurnGuard(self._guard), self._metrics.turn())
        call = context.call_context
        scope = TurnScope(context_id, context.task_id, _caller(call), call)
        await self._sessions.acquire(scope.key)
        try:
            live = await self._start(scope, prompt, reporter)
        except BaseException:
            self._sessions.release(scope.key)
            raise
        if live is not None:
            await self._advance(live)

    async def _start(self, scope: TurnScope, prompt: Prompt, reporter: TaskReporter) -> LiveTurn | None:
        """Opens the context's session and prepares the turn (the prompt goes out on its first step)."""
        try:
            opened = await self._sessions.session_for(scope.key)
        except BackendError as exc:
            await reporter.finish(Done("failed", f"The backend could not run the turn: {exc}"))
            self._sessions.release(scope.key)
            return None
        reporter.metadata.update({"session": opened.session.id, "sessionRecreated": opened.recreated})
        await reporter.working()
        turn = self._backend.turn(opened.session, prompt)
        live = LiveTurn(turn, aiter(turn), reporter, scope, prompt, self._turn_timeout)
        self._live[scope.task_id] = live
        self._drained.clear()
        return live

    async def _advance(self, live: LiveTurn) -> None:
        """Drives the turn until it ends or pauses for a person; an ended turn lets its context go."""
        try:
            try:
                ended = await self._follow(live)
            except SessionGone:  # raised before anything was sent: a new session, once
                if live.reopened:
                    raise
                await self._reopen(live)
                ended = await self._follow(live)
        except BackendError as exc:
            self._end(live)
            await live.reporter.finish(Done("failed", f"The backend could not run the turn: {exc}"))
            return
        except BaseException:
            self._end(live)
            raise
        if ended:
            self._end(live)

    async def _reopen(self, live: LiveTurn) -> None:
        log.info("the session of context %s is gone from the backend; opening another", live.scope.context_id)
        self._sessions.forget(live.scope.key)
        opened = await self._sessions.session_for(live.scope.key)
        live.reporter.metadata.update({"session": opened.session.id, "sessionRecreated": opened.recreated})
        live.turn = self._backend.turn(opened.session, live.prompt)
        live.events = aiter(live.turn)
        live.reopened = True

    async def _follow(self, live: LiveTurn) -> bool:
        """True when the turn ended, False when it paused for a person."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(live.budget):
                async for event in live.events:
                    if isinstance(event, Done):
                        if not live.canceled:
                            await live.reporter.finish(Done("failed", SHUTTING_DOWN) if self._closing else event)
                        return True
                    if await self._handle(event, live):
                        return False
            await live.reporter.finish(Done("failed", "The backend ended the turn without saying it was done."))
        except TimeoutError:
            await _abort(live.turn)
            limit = f"The turn ran past its {self._turn_timeout:g} s limit and was aborted."
            await live.reporter.finish(Done("failed", limit))
        except asyncio.CancelledError:
            await asyncio.shield(_abort(live.turn))
            raise
        finally:
            live.budget -= loop.time() - started
        return True

    async def _handle(self, event: StreamEvent, live: LiveTurn) -> bool:
        """Reports one event; True when the turn now waits for a person."""
        reporter = live.reporter
        match event:
            case Text():
                await reporter.text(event, more_ready=live.turn.more_ready)
            case Thought():
                reporter.thought(event)
            case Usage():
                reporter.usage(event)
            case ToolCall():
                await reporter.tool_call(event)
            case ToolResult():
                await reporter.tool_result(event)
            case Plan():
                await reporter.plan(event)
            case Permission():
                started = time.monotonic()
                decision = (await self._policy_for(live.scope.key)).decide(event)
                if decision.outcome == "ask":
                    self._metrics.decided(classify(event), "ask", "rules")
                    await self._pause(live, Pending(event, decision.reason, decision.rule, self._expiry()))
                    return True
                await self._apply(live, event, decision, "rules", started)
            case Question():
                await self._pause(live, Pending(event, event.text, "question", self._expiry()))
                return True
        return False

    async def _policy_for(self, key: ContextKey) -> PermissionPolicy:
        if not isinstance(self._policy, Shield):
            return self._policy
        rules = await self._context_rules.of(key)
        return self._policy.for_context(rules) if rules else self._policy

    def _expiry(self) -> float:
        ask_timeout = self._policy.ask_timeout if isinstance(self._policy, Shield) else self._ask_timeout
        return time.time() + ask_timeout

    async def _pause(self, live: LiveTurn, pending: Pending) -> None:
        live.pending = pending
        await live.reporter.ask(pending)
        live.deadline = asyncio.create_task(self._expire(live, pending), name=f"deadline-{pending.id}")

    async def _resume(self, live: LiveTurn, message: Message, updater: TaskUpdater) -> None:
        pending = live.pending
        assert pending is not None
        live.reporter.rebind(updater)
        answer = read_answer(message, pending)
        if isinstance(answer, NotAnAnswer):
            await live.reporter.ask(pending, note=answer.sentence)
            return
        live.pending = None
        if live.deadline is not None:
            live.deadline.cancel()
            live.deadline = None
        await live.reporter.working()
        try:
            await self._answer(live, pending, answer)
        except BaseException:
            self._end(live)
            raise
        await self._advance(live)

    async def _answer(self, live: LiveTurn, pending: Pending, answer: Answer) -> None:
        request = pending.request
        if isinstance(request, Question):
            await live.turn.answer(request.id, answer.text)
            return
        expired = time.time() >= pending.expires_at
        who = "deadline" if expired else (live.scope.caller or "person")
        started = time.monotonic() - (time.time() - pending.asked_at)
        if expired or answer.option == "deny":
            decision = Decision("deny", EXPIRED if expired else PERSON_DENIED, f"person:{who}")
        else:
            decision = Decision("allow", f"{request.tool} allowed by {who}", f"person:{who}")
            if answer.option == "allow_context" and isinstance(self._policy, Shield):
                rules = await self._context_rules.of(live.scope.key)
                rule = self._policy.always_rule(request, f"always-{len(rules) + 1}")
                if holds_credential(rule):  # a rule is kept in clear to match: this one is allowed once only
                    decision = Decision("allow", f"{request.tool} allowed once by {who}: {ONCE}", decision.rule)
                else:
                    await self._context_rules.add(live.scope.key, rule)
        await self._apply(live, request, decision, who, started)

    async def _apply(self, live: LiveTurn, request: Permission, decision: Decision, who: str, started: float) -> None:
        """The backend gets the decision, the stream shows it, the audit log keeps it."""
        await live.turn.reply(request.id, "allow" if decision.outcome == "allow" else "deny", decision.reason)
        await live.reporter.permission(request, decision)
        scope = live.scope
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
            answered_by=who,
            wait_ms=(time.monotonic() - started) * 1000,
        )
        await self._audit.record(entry)
        self._metrics.decided(entry.cls, entry.decision, who)

    async def _expire(self, live: LiveTurn, pending: Pending) -> None:
        """No answer by the deadline: the task gets a `deny` as if from its caller, and the turn goes on."""
        await asyncio.sleep(max(0.0, pending.expires_at - time.time()))
        if live.pending is not pending or self._handler is None:
            return
        live.deadline = None  # the answer below must not cancel this task while it sends it
        answer = Message(
            message_id=f"deadline-{pending.id}",
            role=Role.ROLE_USER,
            task_id=live.scope.task_id,
            context_id=live.scope.context_id,
            parts=[new_data_part({"approval": pending.id, "option": "deny"})],
        )
        answer.metadata.update({META: {"synthetic": "approval-deadline"}})
        if isinstance(pending.request, Question):
            answer.parts[0].CopyFrom(new_text_part("No person answered in time; decide on your own."))
        try:
            await self._handler.on_message_send(
                SendMessageRequest(message=answer), live.scope.call or ServerCallContext()
            )
        except Exception:  # a boundary: the turn must not be left waiting because this failed
            log.exception("the deadline's answer for task %s failed; aborting the turn", live.scope.task_id)
            self._end(live)
            await _abort(live.turn)

    async def _reject(self, live: LiveTurn, sentence: str) -> None:
        """The backend request a paused turn waits on gets a no (fail closed)."""
        pending = live.pending
        if pending is not None and isinstance(pending.request, Permission):
            await _quietly(live.turn.reply(pending.request.id, "deny", sentence))

    def _end(self, live: LiveTurn) -> None:
        """The turn is over for this task (ended, canceled, or abandoned): its context is free again."""
        if self._live.get(live.scope.task_id) is not live:
            return
        del self._live[live.scope.task_id]
        if live.deadline is not None:
            live.deadline.cancel()
        self._sessions.release(live.scope.key)
        if not self._live:
            self._drained.set()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        task = context.current_task
        context_id = task.context_id if task else context.context_id
        assert context_id is not None
        live = self._live.get(context.task_id)
        if live is not None and live.pending is not None:  # waiting for a person: reject, stop the backend turn
            self._end(live)
            await self._reject(live, CANCELED)
            await _abort(live.turn)
        elif live is not None:
            live.canceled = True  # running: a2a-sdk cancels execute() next, which aborts the backend turn
        if live is not None:
            live.reporter.clock.end("canceled")
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        await updater.cancel(updater.new_agent_message([new_text_part(CANCELED)]))


def _caller(call: ServerCallContext | None) -> str:
    return call.user.user_name if call is not None and call.user.is_authenticated else ""


async def _abort(turn: Turn) -> None:
    await _quietly(turn.abort())


async def _quietly(action: Awaitable[None]) -> None:
    try:
        await action
    except BackendError as exc:
        log.warning("backend call failed: %s", exc)


ONCE = "not kept for this context: it names a credential, and a rule would keep it in clear"


def holds_credential(rule: Rule) -> bool:
    """Whether a rule's patterns carry text the guard would redact (rules are stored as written, to match)."""
    patterns = [*(rule.commands or ()), *(rule.paths or ()), *(rule.hosts or ())]
    return redact_value(patterns) != patterns
